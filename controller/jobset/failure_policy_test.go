package jobset

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func twoRJobs() *jobSetBuilder {
	return makeJobSet("js").rjob("leader", 1, 2).rjob("workers", 2, 2)
}

func TestFindFirstFailedJob(t *testing.T) {
	js := twoRJobs().obj()
	early := failedJob(childJob(js, "workers", 1), "BackoffLimitExceeded", "", t0)
	late := failedJob(childJob(js, "leader", 0), "BackoffLimitExceeded", "", t0.Add(time.Second))
	notFailed := childJob(js, "workers", 0)
	cases := map[string]struct {
		jobs []*batchv1.Job
		want string
	}{
		"no failed jobs":                       {jobs: nil, want: ""},
		"single failed job":                    {jobs: []*batchv1.Job{late}, want: "js-leader-0"},
		"multiple failed jobs, earliest first": {jobs: []*batchv1.Job{late, early}, want: "js-workers-1"},
		"jobs without failed condition":        {jobs: []*batchv1.Job{notFailed, late}, want: "js-leader-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := findFirstFailedJob(tc.jobs)
			gotName := ""
			if got != nil {
				gotName = got.Name
			}
			if gotName != tc.want {
				t.Errorf("first failed job = %q, want %q", gotName, tc.want)
			}
		})
	}
}

func TestRuleIsApplicable(t *testing.T) {
	js := twoRJobs().obj()
	leader := childJob(js, "leader", 0)
	noLabel := childJob(js, "leader", 0)
	delete(noLabel.Labels, jobsetapi.ReplicatedJobNameKey)
	cases := map[string]struct {
		rule    jobsetapi.FailurePolicyRule
		job     *batchv1.Job
		reason  string
		message string
		want    bool
	}{
		"empty rule matches everything": {rule: jobsetapi.FailurePolicyRule{}, job: leader, reason: "BackoffLimitExceeded", want: true},
		"target matches":                {rule: jobsetapi.FailurePolicyRule{TargetReplicatedJobs: []string{"leader"}}, job: leader, want: true},
		"target does not match":         {rule: jobsetapi.FailurePolicyRule{TargetReplicatedJobs: []string{"workers"}}, job: leader, want: false},
		"reason matches": {rule: jobsetapi.FailurePolicyRule{OnJobFailureReasons: []string{"PodFailurePolicy"}},
			job: leader, reason: "PodFailurePolicy", want: true},
		"reason does not match": {rule: jobsetapi.FailurePolicyRule{OnJobFailureReasons: []string{"PodFailurePolicy"}},
			job: leader, reason: "BackoffLimitExceeded", want: false},
		"reason matches, target does not": {rule: jobsetapi.FailurePolicyRule{OnJobFailureReasons: []string{"BackoffLimitExceeded"}, TargetReplicatedJobs: []string{"workers"}},
			job: leader, reason: "BackoffLimitExceeded", want: false},
		"message pattern matches": {rule: jobsetapi.FailurePolicyRule{OnJobFailureMessagePatterns: []string{"exit code [0-9]+"}},
			job: leader, message: "Container main failed with exit code 42", want: true},
		"message pattern does not match": {rule: jobsetapi.FailurePolicyRule{OnJobFailureMessagePatterns: []string{"^OOM"}},
			job: leader, message: "Job has reached the specified backoff limit", want: false},
		"invalid pattern is skipped": {rule: jobsetapi.FailurePolicyRule{OnJobFailureMessagePatterns: []string{"(", "backoff"}},
			job: leader, message: "Job has reached the specified backoff limit", want: true},
		"missing replicatedjob label never matches": {rule: jobsetapi.FailurePolicyRule{}, job: noLabel, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ruleIsApplicable(tc.rule, tc.job, tc.reason, tc.message, discardLogger()); got != tc.want {
				t.Errorf("ruleIsApplicable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindFirstFailedPolicyRuleAndJob(t *testing.T) {
	js := twoRJobs().obj()
	leaderFail := failedJob(childJob(js, "leader", 0), "PodFailurePolicy", "", t0.Add(2*time.Second))
	workerFail := failedJob(childJob(js, "workers", 1), "BackoffLimitExceeded", "", t0)
	rules := []jobsetapi.FailurePolicyRule{
		{Name: "onlyLeader", Action: jobsetapi.FailJobSet, TargetReplicatedJobs: []string{"leader"}},
		{Name: "any", Action: jobsetapi.RestartJobSet},
	}
	cases := map[string]struct {
		rules    []jobsetapi.FailurePolicyRule
		jobs     []*batchv1.Job
		wantRule string
		wantJob  string
	}{
		"first rule wins even if a later rule matches an earlier failure": {rules: rules,
			jobs: []*batchv1.Job{workerFail, leaderFail}, wantRule: "onlyLeader", wantJob: "js-leader-0"},
		"second rule gets the earliest failure": {rules: rules[1:],
			jobs: []*batchv1.Job{leaderFail, workerFail}, wantRule: "any", wantJob: "js-workers-1"},
		"no rule matches": {rules: rules[:1], jobs: []*batchv1.Job{workerFail}},
		"reason filters jobs": {rules: []jobsetapi.FailurePolicyRule{{Name: "pfp", OnJobFailureReasons: []string{"PodFailurePolicy"}}},
			jobs: []*batchv1.Job{workerFail, leaderFail}, wantRule: "pfp", wantJob: "js-leader-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rule, job := findFirstFailedPolicyRuleAndJob(tc.rules, tc.jobs, discardLogger())
			gotRule, gotJob := "", ""
			if rule != nil {
				gotRule, gotJob = rule.Name, job.Name
			}
			if gotRule != tc.wantRule || gotJob != tc.wantJob {
				t.Errorf("got (%q, %q), want (%q, %q)", gotRule, gotJob, tc.wantRule, tc.wantJob)
			}
		})
	}
}

func TestApplyFailurePolicy(t *testing.T) {
	now := t0.Add(time.Minute)
	leaderFailed := func(js *jobsetapi.JobSet) []*batchv1.Job {
		return []*batchv1.Job{failedJob(childJob(js, "leader", 0), "BackoffLimitExceeded", "Job has reached the specified backoff limit", t0)}
	}
	workerFailed := func(js *jobsetapi.JobSet) []*batchv1.Job {
		return []*batchv1.Job{failedJob(childJob(js, "workers", 1), "BackoffLimitExceeded", "", t0)}
	}
	type want struct {
		failedReason, failedMessage       string
		restartingReason                  string
		restarts, restartsCountTowardsMax int32
		jobRestarts                       []int32
		events                            []string
	}
	cases := map[string]struct {
		js     *jobsetapi.JobSet
		failed func(*jobsetapi.JobSet) []*batchv1.Job
		want   want
	}{
		"no failure policy fails with FailedJobs": {js: twoRJobs().obj(), failed: leaderFailed, want: want{
			failedReason: "FailedJobs", failedMessage: "jobset failed due to one or more job failures (first failed job: js-leader-0)",
			events: []string{"Warning FailedJobs jobset failed due to one or more job failures (first failed job: js-leader-0)"}}},
		"FailJobSet action": {js: twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.FailJobSet, TargetReplicatedJobs: []string{"leader"}}).obj(),
			failed: leaderFailed, want: want{failedReason: "FailJobSetFailurePolicyAction",
				failedMessage: "applying FailJobSet failure policy action (first failed job: js-leader-0)",
				events:        []string{"Warning FailJobSetFailurePolicyAction applying FailJobSet failure policy action (first failed job: js-leader-0)"}}},
		"RestartJobSet below max restarts counts towards max and sets FailurePolicy_<rule>": {
			js:     twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSet, TargetReplicatedJobs: []string{"leader"}}).obj(),
			failed: leaderFailed, want: want{restartingReason: "FailurePolicy_failurePolicyRule0", restarts: 1, restartsCountTowardsMax: 1,
				events: []string{
					"Warning FailurePolicy_failurePolicyRule0 applying RestartJobSet failure policy action (first failed job: js-leader-0)",
					"Warning RestartJobSetFailurePolicyAction applying RestartJobSet failure policy action (first failed job: js-leader-0)"}}},
		"RestartJobSet at max restarts fails the jobset": {
			js:     twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSet}).restarts(3).withCounted(3).obj(),
			failed: leaderFailed, want: want{failedReason: "ReachedMaxRestarts", restarts: 3, restartsCountTowardsMax: 3,
				failedMessage: "jobset failed due to reaching max number of restarts (first failed job: js-leader-0)",
				events:        []string{"Warning ReachedMaxRestarts jobset failed due to reaching max number of restarts (first failed job: js-leader-0)"}}},
		"RestartJobSetAndIgnoreMaxRestarts does not count towards max": {
			js:     twoRJobs().failurePolicy(0, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobSetAndIgnoreMaxRestarts}).restarts(5).obj(),
			failed: leaderFailed, want: want{restartingReason: "FailurePolicy_failurePolicyRule0", restarts: 6,
				events: []string{
					"Warning FailurePolicy_failurePolicyRule0 applying RestartJobSetAndIgnoreMaxRestarts failure policy action (first failed job: js-leader-0)",
					"Warning RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction applying RestartJobSetAndIgnoreMaxRestarts failure policy action (first failed job: js-leader-0)"}}},
		"no rule matches: default RestartJobSet with DefaultFailurePolicy": {
			js:     twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.FailJobSet, TargetReplicatedJobs: []string{"leader"}}).obj(),
			failed: workerFailed, want: want{restartingReason: "DefaultFailurePolicy", restarts: 1, restartsCountTowardsMax: 1,
				events: []string{
					"Warning DefaultFailurePolicy applying RestartJobSet failure policy action (first failed job: js-workers-1)",
					"Warning RestartJobSetFailurePolicyAction applying RestartJobSet failure policy action (first failed job: js-workers-1)"}}},
		"failure policy without rules and maxRestarts 0 fails": {js: twoRJobs().failurePolicy(0).obj(), failed: leaderFailed,
			want: want{failedReason: "ReachedMaxRestarts", failedMessage: "jobset failed due to reaching max number of restarts (first failed job: js-leader-0)",
				events: []string{"Warning ReachedMaxRestarts jobset failed due to reaching max number of restarts (first failed job: js-leader-0)"}}},
		"RestartJob bumps only the failed job's restart count": {
			js:     twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJob, TargetReplicatedJobs: []string{"workers"}}).obj(),
			failed: workerFailed, want: want{jobRestarts: []int32{0, 1},
				events: []string{"Warning RestartJobFailurePolicyAction applying RestartJob failure policy action (first failed job: js-workers-1)"}}},
		"RecreateJob is accepted as RestartJob": {
			js:     twoRJobs().failurePolicy(3, jobsetapi.FailurePolicyRule{Action: "RecreateJob", TargetReplicatedJobs: []string{"workers"}}).obj(),
			failed: workerFailed, want: want{jobRestarts: []int32{0, 1},
				events: []string{"Warning RestartJobFailurePolicyAction applying RestartJob failure policy action (first failed job: js-workers-1)"}}},
		"RestartJob at max restarts (counting a global restart) fails": {
			js:     twoRJobs().failurePolicy(1, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJob}).restarts(1).withCounted(1).obj(),
			failed: workerFailed, want: want{failedReason: "ReachedMaxRestarts", restarts: 1, restartsCountTowardsMax: 1,
				failedMessage: "jobset failed due to reaching max number of restarts (first failed job: js-workers-1)",
				events:        []string{"Warning ReachedMaxRestarts jobset failed due to reaching max number of restarts (first failed job: js-workers-1)"}}},
		"RestartJobAndIgnoreMaxRestarts does not count towards max": {
			js:     twoRJobs().failurePolicy(0, jobsetapi.FailurePolicyRule{Action: jobsetapi.RestartJobAndIgnoreMaxRestarts}).obj(),
			failed: workerFailed, want: want{jobRestarts: []int32{0, 1},
				events: []string{"Warning RestartJobAndIgnoreMaxRestartsFailurePolicyAction applying RestartJobAndIgnoreMaxRestarts failure policy action (first failed job: js-workers-1)"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := tc.js
			js.Status.ReplicatedJobsStatus = []jobsetapi.ReplicatedJobStatus{{Name: "workers"}, {Name: "leader"}}
			p := &plan{js: js.DeepCopy()}
			if err := p.executeFailurePolicy(tc.failed(js), now, discardLogger()); err != nil {
				t.Fatalf("executeFailurePolicy: %v", err)
			}
			checkFailurePlan(t, p, tc.want.failedReason, tc.want.failedMessage, tc.want.restartingReason)
			if p.js.Status.Restarts != tc.want.restarts || p.js.Status.RestartsCountTowardsMax != tc.want.restartsCountTowardsMax {
				t.Errorf("restarts = %d/%d, want %d/%d", p.js.Status.Restarts, p.js.Status.RestartsCountTowardsMax, tc.want.restarts, tc.want.restartsCountTowardsMax)
			}
			if tc.want.jobRestarts != nil {
				got := findReplicatedJobStatus(p.js.Status.ReplicatedJobsStatus, "workers").JobRestarts
				if !slices.Equal(got, tc.want.jobRestarts) {
					t.Errorf("workers jobRestarts = %v, want %v", got, tc.want.jobRestarts)
				}
			}
			if got := eventStrings(p.events); !slices.Equal(got, tc.want.events) {
				t.Errorf("events = %q, want %q", got, tc.want.events)
			}
		})
	}
}

func (b *jobSetBuilder) withCounted(n int32) *jobSetBuilder {
	b.js.Status.RestartsCountTowardsMax = n
	return b
}

func checkFailurePlan(t *testing.T, p *plan, failedReason, failedMessage, restartingReason string) {
	t.Helper()
	failed := findCond(p.js, jobsetapi.JobSetFailed)
	switch {
	case failedReason == "" && failed != nil:
		t.Errorf("unexpected Failed condition %+v", failed)
	case failedReason != "" && (failed == nil || failed.Reason != failedReason || failed.Message != failedMessage || failed.Status != metav1.ConditionTrue):
		t.Errorf("Failed condition = %+v, want reason %q message %q", failed, failedReason, failedMessage)
	case failedReason != "" && p.js.Status.TerminalState != "Failed":
		t.Errorf("terminalState = %q, want Failed", p.js.Status.TerminalState)
	}
	restarting := findCond(p.js, jobsetapi.JobSetRestarting)
	if restartingReason != "" && (restarting == nil || restarting.Reason != restartingReason || restarting.Status != metav1.ConditionTrue) {
		t.Errorf("RestartingJobSet condition = %+v, want True reason %q", restarting, restartingReason)
	}
	if !p.updateStatus {
		t.Errorf("plan does not update the status")
	}
}

func eventStrings(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}
