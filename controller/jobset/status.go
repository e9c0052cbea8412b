package jobset

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// conditionUpdate is a condition to set plus the type of the event it raises.
type conditionUpdate struct {
	eventType string
	cond      metav1.Condition
}

// setCondition applies c to the JobSet status with upstream's semantics and
// queues an event carrying the condition's reason and message if anything
// changed.
func (p *plan) setCondition(c conditionUpdate, now time.Time) {
	if !updateCondition(&p.js.Status, c.cond, now) {
		return
	}
	p.markStatusChanged()
	p.queueEvent(c.eventType, c.cond.Reason, c.cond.Message)
}

// updateCondition merges cond into status.Conditions and reports whether
// anything changed:
//   - same type, different status: replaced with a new transition time;
//   - same status, different reason or message: updated, time kept;
//   - StartupPolicyInProgress and StartupPolicyCompleted exclude each other;
//   - a missing condition is appended only when it is True.
func updateCondition(status *jobsetapi.JobSetStatus, cond metav1.Condition, now time.Time) bool {
	cond.LastTransitionTime = metav1.NewTime(now)
	found, changed := false, false
	for i, cur := range status.Conditions {
		if cur.Type != cond.Type {
			if exclusiveConditions(cur.Type, cond.Type) && cur.Status == metav1.ConditionTrue && cond.Status == metav1.ConditionTrue {
				status.Conditions[i].Status = metav1.ConditionFalse
				changed = true
			}
			continue
		}
		found = true
		switch {
		case cur.Status != cond.Status:
			status.Conditions[i] = cond
			changed = true
		case cur.Reason != cond.Reason || cur.Message != cond.Message:
			cond.LastTransitionTime = cur.LastTransitionTime
			status.Conditions[i] = cond
			changed = true
		}
	}
	if !found && cond.Status == metav1.ConditionTrue {
		status.Conditions = append(status.Conditions, cond)
		changed = true
	}
	return changed
}

func exclusiveConditions(a, b string) bool {
	inProgress := string(jobsetapi.JobSetStartupPolicyInProgress)
	completed := string(jobsetapi.JobSetStartupPolicyCompleted)
	return (a == inProgress && b == completed) || (a == completed && b == inProgress)
}

func newCondition(eventType string, t jobsetapi.JobSetConditionType, status metav1.ConditionStatus, reason, message string) conditionUpdate {
	return conditionUpdate{eventType: eventType, cond: metav1.Condition{
		Type: string(t), Status: status, Reason: reason, Message: message,
	}}
}

// setCompleted marks the JobSet Completed (terminal).
func (p *plan) setCompleted(now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetCompleted, metav1.ConditionTrue,
		reasonAllJobsCompleted, messageAllJobsCompleted), now)
	p.setRestartingFalse(reasonRestartJobSetComplete, messageAllJobsCompleted, now)
	p.js.Status.TerminalState = string(jobsetapi.JobSetCompleted)
	p.completed = true
}

// setFailed marks the JobSet Failed (terminal) with reason and message.
func (p *plan) setFailed(reason, message string, now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeWarning, jobsetapi.JobSetFailed, metav1.ConditionTrue,
		reason, message), now)
	p.setRestartingFalse(reasonRestartJobSetFailed, messageRestartJobSetFailed, now)
	p.js.Status.TerminalState = string(jobsetapi.JobSetFailed)
	p.failed = true
}

func (p *plan) setRestartingFalse(reason, message string, now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetRestarting, metav1.ConditionFalse,
		reason, message), now)
}

func (p *plan) setSuspended(now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetSuspended, metav1.ConditionTrue,
		reasonSuspended, messageSuspended), now)
	p.setRestartingFalse(reasonRestartJobSetSuspend, messageSuspended, now)
}

func (p *plan) setResumed(now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetSuspended, metav1.ConditionFalse,
		reasonResumed, messageResumed), now)
}

// jobSetFinished reports whether the JobSet has a Completed or Failed=True condition.
func jobSetFinished(js *jobsetapi.JobSet) bool {
	_, ok := finishedCondition(js)
	return ok
}

func finishedCondition(js *jobsetapi.JobSet) (metav1.Condition, bool) {
	for _, c := range js.Status.Conditions {
		if (c.Type == string(jobsetapi.JobSetCompleted) || c.Type == string(jobsetapi.JobSetFailed)) && c.Status == metav1.ConditionTrue {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// rjobCounts accumulates the per-replicatedJob counters of the status.
type rjobCounts struct{ ready, succeeded, failed, active, suspended int32 }

// calculateReplicatedJobStatuses counts the current-run child Jobs per
// replicatedJob. The per-Job restart arrays are carried over from the old
// status. The result is sorted by name, descending, as upstream stores it.
func calculateReplicatedJobStatuses(js *jobsetapi.JobSet, jobs *childJobs, log *slog.Logger) []jobsetapi.ReplicatedJobStatus {
	counts := map[string]*rjobCounts{}
	for _, rjob := range js.Spec.ReplicatedJobs {
		counts[rjob.Name] = &rjobCounts{}
	}
	lookup := func(job *batchv1.Job) *rjobCounts {
		name := job.Labels[jobsetapi.ReplicatedJobNameKey]
		c := counts[name]
		if c == nil {
			log.Error("child job has no known replicatedJob label", "job", job.Name, "replicatedJob", name)
		}
		return c
	}
	for _, job := range jobs.active {
		if c := lookup(job); c != nil {
			countActiveJob(c, job)
		}
	}
	for _, job := range jobs.successful {
		if c := lookup(job); c != nil {
			c.succeeded++
		}
	}
	for _, job := range jobs.failed {
		if c := lookup(job); c != nil {
			c.failed++
		}
	}
	return buildReplicatedJobStatuses(js, counts)
}

func countActiveJob(c *rjobCounts, job *batchv1.Job) {
	pods := ptr.Deref(job.Spec.Parallelism, 1)
	if job.Spec.Completions != nil && *job.Spec.Completions < pods {
		pods = *job.Spec.Completions
	}
	if job.Status.Succeeded+ptr.Deref(job.Status.Ready, 0) >= pods {
		c.ready++
	}
	if job.Status.Active > 0 {
		c.active++
	}
	if ptr.Deref(job.Spec.Suspend, false) {
		c.suspended++
	}
}

func buildReplicatedJobStatuses(js *jobsetapi.JobSet, counts map[string]*rjobCounts) []jobsetapi.ReplicatedJobStatus {
	var out []jobsetapi.ReplicatedJobStatus
	for name, c := range counts {
		s := jobsetapi.ReplicatedJobStatus{
			Name: name, Ready: c.ready, Succeeded: c.succeeded, Failed: c.failed,
			Active: c.active, Suspended: c.suspended,
		}
		if old := findReplicatedJobStatus(js.Status.ReplicatedJobsStatus, name); old != nil {
			s.JobRestarts = slices.Clone(old.JobRestarts)
			s.JobRestartsCountTowardsMax = slices.Clone(old.JobRestartsCountTowardsMax)
		}
		out = append(out, s)
	}
	sortStatusesDescending(out)
	return out
}

func sortStatusesDescending(s []jobsetapi.ReplicatedJobStatus) {
	slices.SortFunc(s, func(a, b jobsetapi.ReplicatedJobStatus) int { return strings.Compare(b.Name, a.Name) })
}

// replicatedJobStatusesEqual compares two status lists independent of order.
func replicatedJobStatusesEqual(a, b []jobsetapi.ReplicatedJobStatus) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sortStatusesDescending(a)
	sortStatusesDescending(b)
	return apiequality.Semantic.DeepEqual(a, b)
}

func findReplicatedJobStatus(statuses []jobsetapi.ReplicatedJobStatus, name string) *jobsetapi.ReplicatedJobStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// allJobsReady reports whether every expected Job is ready or succeeded.
func allJobsReady(js *jobsetapi.JobSet, statuses []jobsetapi.ReplicatedJobStatus) bool {
	var total, ready int32
	for _, rjob := range js.Spec.ReplicatedJobs {
		total += rjob.Replicas
	}
	for _, s := range statuses {
		ready += s.Ready + s.Succeeded
	}
	return total == ready
}
