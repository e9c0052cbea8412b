package jobset

import (
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// defaultFailurePolicyAction applies when no rule matches a failed Job.
const defaultFailurePolicyAction = jobsetapi.RestartJobSet

// executeFailurePolicy decides what a failed current-run Job does to the
// JobSet. It only runs when at least one such Job exists.
func (p *plan) executeFailurePolicy(failed []*batchv1.Job, now time.Time, log *slog.Logger) error {
	fp := p.js.Spec.FailurePolicy
	if fp == nil {
		first := findFirstFailedJob(failed)
		p.setFailed(reasonFailedJobs, messageWithFirstFailedJob(messageFailedJobs, first.Name), now)
		return nil
	}
	rule, job := findFirstFailedPolicyRuleAndJob(fp.Rules, failed, log)
	action := defaultFailurePolicyAction
	if rule == nil {
		job = findFirstFailedJob(failed)
	} else {
		action = normalizeAction(rule.Action)
	}
	return p.applyFailurePolicyAction(action, rule, job, now)
}

// normalizeAction maps the seed's RecreateJob spelling to RestartJob.
func normalizeAction(a jobsetapi.FailurePolicyAction) jobsetapi.FailurePolicyAction {
	if a == recreateJobActionName {
		return jobsetapi.RestartJob
	}
	return a
}

func (p *plan) applyFailurePolicyAction(action jobsetapi.FailurePolicyAction, rule *jobsetapi.FailurePolicyRule, job *batchv1.Job, now time.Time) error {
	switch action {
	case jobsetapi.FailJobSet:
		p.setFailed(reasonFailJobSetAction, messageWithFirstFailedJob(messageFailJobSetAction, job.Name), now)
		return nil
	case jobsetapi.RestartJobSet:
		if p.reachedMaxRestarts() {
			p.failMaxRestarts(job, now)
			return nil
		}
		p.restartJobSet(rule, job, true, reasonRestartJobSetAction, messageRestartJobSetAction, now)
		return nil
	case jobsetapi.RestartJobSetAndIgnoreMaxRestarts:
		p.restartJobSet(rule, job, false, reasonRestartJobSetAndIgnoreMaxRestartsAction, messageRestartJobSetAndIgnoreMaxRestartsAction, now)
		return nil
	case jobsetapi.RestartJob:
		if p.reachedMaxRestarts() {
			p.failMaxRestarts(job, now)
			return nil
		}
		return p.restartJob(job, true, reasonRestartJobAction, messageRestartJobAction)
	case jobsetapi.RestartJobAndIgnoreMaxRestarts:
		return p.restartJob(job, false, reasonRestartJobAndIgnoreMaxRestartsAction, messageRestartJobAndIgnoreMaxRestartsAction)
	}
	return fmt.Errorf("failed to find a corresponding action for the FailurePolicyRuleAction %v", action)
}

// reachedMaxRestarts counts global restarts plus per-Job restarts that
// count toward maxRestarts.
func (p *plan) reachedMaxRestarts() bool {
	return totalRestartsCountTowardsMax(p.js) >= p.js.Spec.FailurePolicy.MaxRestarts
}

func (p *plan) failMaxRestarts(job *batchv1.Job, now time.Time) {
	p.setFailed(reasonReachedMaxRestarts, messageWithFirstFailedJob(messageReachedMaxRestarts, job.Name), now)
}

// restartJobSet bumps status.restarts, which turns every existing Job into
// a previous-run Job to delete and recreate.
func (p *plan) restartJobSet(rule *jobsetapi.FailurePolicyRule, job *batchv1.Job, countsTowardsMax bool, eventReason, baseMessage string, now time.Time) {
	message := messageWithFirstFailedJob(baseMessage, job.Name)
	reason := reasonDefaultFailurePolicy
	if rule != nil {
		reason = fmt.Sprintf(reasonFailurePolicyFormat, rule.Name)
	}
	p.js.Status.Restarts++
	if countsTowardsMax {
		p.js.Status.RestartsCountTowardsMax++
	}
	p.markStatusChanged()
	p.setCondition(newCondition(corev1.EventTypeWarning, jobsetapi.JobSetRestarting, metav1.ConditionTrue, reason, message), now)
	p.queueEvent(corev1.EventTypeWarning, eventReason, message)
}

// restartJob bumps the failed Job's per-Job restart count so only that Job
// is deleted and recreated.
func (p *plan) restartJob(job *batchv1.Job, countsTowardsMax bool, eventReason, baseMessage string) error {
	rjobName, ok := job.Labels[jobsetapi.ReplicatedJobNameKey]
	if !ok {
		return fmt.Errorf("failed job %s missing %s label", job.Name, jobsetapi.ReplicatedJobNameKey)
	}
	idx, err := strconv.Atoi(job.Labels[jobsetapi.JobIndexKey])
	if err != nil {
		return fmt.Errorf("failed job %s has invalid %s label: %w", job.Name, jobsetapi.JobIndexKey, err)
	}
	status := findReplicatedJobStatus(p.js.Status.ReplicatedJobsStatus, rjobName)
	restarts := jobRestarts(p.js, rjobName)
	if status == nil || idx < 0 || idx >= len(restarts) {
		return fmt.Errorf("failed job %s has index %d out of bounds for replicated job %s", job.Name, idx, rjobName)
	}
	restarts[idx]++
	status.JobRestarts = restarts
	if countsTowardsMax {
		counted := jobRestartsCountTowardsMax(p.js, rjobName)
		counted[idx]++
		status.JobRestartsCountTowardsMax = counted
	}
	p.markStatusChanged()
	p.queueEvent(corev1.EventTypeWarning, eventReason, messageWithFirstFailedJob(baseMessage, job.Name))
	return nil
}

// findFirstFailedPolicyRuleAndJob returns the first rule, in order, that
// applies to any failed Job, with the earliest-failing Job it applies to.
func findFirstFailedPolicyRuleAndJob(rules []jobsetapi.FailurePolicyRule, failed []*batchv1.Job, log *slog.Logger) (*jobsetapi.FailurePolicyRule, *batchv1.Job) {
	for i := range rules {
		var match *batchv1.Job
		var matchTime metav1.Time
		for _, job := range failed {
			cond := jobFailedCondition(job)
			if cond == nil || !ruleIsApplicable(rules[i], job, cond.Reason, cond.Message, log) {
				continue
			}
			if match == nil || cond.LastTransitionTime.Before(&matchTime) {
				match, matchTime = job, cond.LastTransitionTime
			}
		}
		if match != nil {
			return &rules[i], match
		}
	}
	return nil, nil
}

// ruleIsApplicable matches a rule's reasons, message patterns and target
// replicatedJobs against a failed Job. Empty lists match everything.
func ruleIsApplicable(rule jobsetapi.FailurePolicyRule, job *batchv1.Job, reason, message string, log *slog.Logger) bool {
	if len(rule.OnJobFailureReasons) > 0 && !slices.Contains(rule.OnJobFailureReasons, reason) {
		return false
	}
	if len(rule.OnJobFailureMessagePatterns) > 0 && !anyPatternMatches(rule.OnJobFailureMessagePatterns, message, log) {
		return false
	}
	rjobName := job.Labels[jobsetapi.ReplicatedJobNameKey]
	if rjobName == "" {
		return false
	}
	return len(rule.TargetReplicatedJobs) == 0 || slices.Contains(rule.TargetReplicatedJobs, rjobName)
}

func anyPatternMatches(patterns []string, message string, log *slog.Logger) bool {
	for _, pattern := range patterns {
		ok, err := regexp.MatchString(pattern, message)
		if err != nil {
			log.Error("invalid regex for onJobFailureMessagePatterns", "pattern", pattern, "err", err)
			continue
		}
		if ok {
			return true
		}
	}
	return false
}

// findFirstFailedJob returns the Job whose Failed condition is oldest.
func findFirstFailedJob(failed []*batchv1.Job) *batchv1.Job {
	var first *batchv1.Job
	var firstTime metav1.Time
	for _, job := range failed {
		cond := jobFailedCondition(job)
		if cond == nil {
			continue
		}
		if first == nil || cond.LastTransitionTime.Before(&firstTime) {
			first, firstTime = job, cond.LastTransitionTime
		}
	}
	return first
}

func jobFailedCondition(job *batchv1.Job) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func messageWithFirstFailedJob(message, jobName string) string {
	return fmt.Sprintf("%s (first failed job: %s)", message, jobName)
}

// jobRestarts returns a copy of the per-Job restart counts of a
// replicatedJob, or zeros (one per replica) when none are recorded yet.
func jobRestarts(js *jobsetapi.JobSet, rjobName string) []int32 {
	if s := findReplicatedJobStatus(js.Status.ReplicatedJobsStatus, rjobName); s != nil && len(s.JobRestarts) > 0 {
		return slices.Clone(s.JobRestarts)
	}
	return make([]int32, replicasOf(js, rjobName))
}

func jobRestartsCountTowardsMax(js *jobsetapi.JobSet, rjobName string) []int32 {
	if s := findReplicatedJobStatus(js.Status.ReplicatedJobsStatus, rjobName); s != nil && len(s.JobRestartsCountTowardsMax) > 0 {
		return slices.Clone(s.JobRestartsCountTowardsMax)
	}
	return make([]int32, replicasOf(js, rjobName))
}

func replicasOf(js *jobsetapi.JobSet, rjobName string) int32 {
	for _, rjob := range js.Spec.ReplicatedJobs {
		if rjob.Name == rjobName {
			return rjob.Replicas
		}
	}
	return 0
}

// totalRestartsCountTowardsMax is the number of RestartJobSet plus RestartJob
// actions applied so far.
func totalRestartsCountTowardsMax(js *jobsetapi.JobSet) int32 {
	total := js.Status.RestartsCountTowardsMax
	for _, s := range js.Status.ReplicatedJobsStatus {
		for _, n := range s.JobRestartsCountTowardsMax {
			total += n
		}
	}
	return total
}
