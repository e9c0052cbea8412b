package job

import (
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// tunables are the knobs of the decision functions.
type tunables struct {
	podFailureBackOff    time.Duration
	maxPodFailureBackOff time.Duration
	maxUncountedPods     int
	maxCreateDelete      int
}

func defaultTunables() tunables {
	return tunables{
		podFailureBackOff:    DefaultJobPodFailureBackOff,
		maxPodFailureBackOff: MaxJobPodFailureBackOff,
		maxUncountedPods:     MaxUncountedPods,
		maxCreateDelete:      MaxPodCreateDeletePerSync,
	}
}

// syncInput is everything one sync decides from.
type syncInput struct {
	job  *batch.Job // a private copy; its status is rewritten
	pods []*v1.Pod  // the Job's pods, after adoption
	// live are the pods that can still change the status: not terminal,
	// or terminal and still holding the tracking finalizer. Set by
	// newSyncState; every pass except the pod failure policy's FailJob
	// scan walks these instead of all pods.
	live []*v1.Pod
	// liveFacts[i] is what the passes read of live[i], read once.
	liveFacts             []podFacts
	satisfiedExpectations bool
	expectedRmFinalizers  sets.Set[types.UID]
	backoff               backoffRecord
	now                   time.Time
	tun                   tunables
}

// event is a Job event to record.
type event struct{ kind, reason, message string }

// syncState is the working state of one sync: what was observed, what was
// decided, and the new status being built.
type syncState struct {
	syncInput
	activePods  []*v1.Pod
	activeIx    []int // activeIx[i] is the completion index of activePods[i]
	active      int32
	ready       int32
	terminating int32

	uncountedSucceeded sets.Set[types.UID]
	uncountedFailed    sets.Set[types.UID]
	succeeded, failed  int32

	prevSucceededIndexes indexSet
	succeededIndexes     indexSet
	failedIndexes        *indexSet
	delayedDeletion      map[int]*v1.Pod

	finishedCond *batch.JobCondition
	newBackoff   backoffRecord

	// Pod operations, at most one kind per sync.
	deleteActive  []*v1.Pod // the Job is finishing: plain DELETE
	deleteJobPods []*v1.Pod // suspend / scale down: drop finalizer, then DELETE
	creates       []podCreate
	createReason  string

	manageJobCalled bool
	action          string
	requeueAfter    time.Duration // 0: none
	events          []event
}

// decide runs the first half of a sync: counting, terminal conditions and
// the pod operations. The apply layer executes the operations and calls
// afterPodOps with the outcome.
func decide(in syncInput) *syncState {
	st := newSyncState(in)
	job := st.job
	if job.Status.StartTime == nil && !isSuspended(job) {
		t := metav1.NewTime(in.now)
		job.Status.StartTime = &t
	}
	newSucceeded, newFailed := st.newFinishedPods()
	st.succeeded = job.Status.Succeeded + int32(len(newSucceeded)) + int32(st.uncountedSucceeded.Len())
	st.failed = job.Status.Failed + st.countedFailures(newFailed) + int32(st.uncountedFailed.Len())
	st.newBackoff = nextBackoffRecord(in.backoff, newSucceeded, newFailed)

	st.evaluateFailure()
	if isIndexed(job) {
		st.evaluateIndexed()
	}
	if st.finishedCond != nil {
		st.deleteActive = st.activePods
		return st
	}
	if in.satisfiedExpectations && job.DeletionTimestamp == nil {
		st.manageJob()
	}
	return st
}

func newSyncState(in syncInput) *syncState {
	if in.job.Status.UncountedTerminatedPods == nil {
		in.job.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{}
	}
	if in.expectedRmFinalizers == nil {
		in.expectedRmFinalizers = sets.New[types.UID]()
	}
	in.live, in.liveFacts = livePods(in.pods, isIndexed(in.job))
	st := &syncState{syncInput: in, action: actionReconciling}
	var ev *event
	// A bad annotation is reported once, as the Job starts, not at every
	// status write.
	if st.tun, ev = jobTunables(in.job, in.tun); ev != nil && in.job.Status.StartTime == nil {
		st.events = append(st.events, *ev)
	}
	st.activePods, st.activeIx = st.activeWithIndexes()
	st.active = int32(len(st.activePods))
	st.ready = countPods(st.activePods, isPodReady)
	st.terminating = countPods(in.live, isTerminating)
	u := in.job.Status.UncountedTerminatedPods
	st.uncountedSucceeded = sets.New(u.Succeeded...)
	st.uncountedFailed = sets.New(u.Failed...)
	return st
}

// countable: the live pod i still holds the finalizer, is not waiting for
// its removal and, for Indexed Jobs, has a valid index.
func (st *syncState) countable(i int) bool {
	f := st.liveFacts[i]
	if !f.finalizer || st.expectedRmFinalizers.Has(st.live[i].UID) {
		return false
	}
	return !isIndexed(st.job) || st.validIndex(f.index)
}

// validIndex: ix is a usable index below completions.
func (st *syncState) validIndex(ix int) bool {
	return ix != unknownIndex && ix < int(*st.job.Spec.Completions)
}

// newFinishedPods are the finished pods not yet in the counters.
func (st *syncState) newFinishedPods() (succeeded, failed []*v1.Pod) {
	for i, p := range st.live {
		if !st.countable(i) {
			continue
		}
		if p.Status.Phase == v1.PodSucceeded && !st.uncountedSucceeded.Has(p.UID) {
			succeeded = append(succeeded, p)
		} else if isPodFailed(p, st.job) && !st.uncountedFailed.Has(p.UID) {
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// countedFailures drops the failures the pod failure policy ignores.
func (st *syncState) countedFailures(failed []*v1.Pod) int32 {
	var n int32
	for _, p := range failed {
		if matchPodFailurePolicy(st.job.Spec.PodFailurePolicy, p).count {
			n++
		}
	}
	return n
}

// evaluateFailure applies the terminal rules that hold for every Job, in
// upstream's order: an earlier interim condition, FailJob, backoffLimit,
// activeDeadlineSeconds.
func (st *syncState) evaluateFailure() {
	job := st.job
	if c := findCondition(job.Status.Conditions, batch.JobSuccessCriteriaMet); c != nil && c.Status == v1.ConditionTrue {
		st.finishedCond = c.DeepCopy()
		return
	}
	if c := findCondition(job.Status.Conditions, batch.JobFailureTarget); c != nil && c.Status == v1.ConditionTrue {
		st.finishedCond = newCondition(batch.JobFailed, v1.ConditionTrue, c.Reason, c.Message, st.now)
		return
	}
	if msg, ok := failJobMessage(job, st.pods); ok {
		st.finishedCond = newCondition(batch.JobFailureTarget, v1.ConditionTrue, batch.JobReasonPodFailurePolicy, msg, st.now)
		return
	}
	switch {
	case st.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, st.live):
		st.finishedCond = st.failure(batch.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded)
	case pastActiveDeadline(job, st.now):
		st.finishedCond = st.failure(batch.JobReasonDeadlineExceeded, msgDeadlineExceeded)
	default:
		if d := deadlineRequeue(job, st.now); d > 0 {
			st.requeue(d)
		}
	}
}

func (st *syncState) failure(reason, message string) *batch.JobCondition {
	return newCondition(batch.JobFailureTarget, v1.ConditionTrue, reason, message, st.now)
}

// requeue asks for another sync after d; the shortest request wins.
func (st *syncState) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Nanosecond
	}
	if st.requeueAfter == 0 || d < st.requeueAfter {
		st.requeueAfter = d
	}
}

// podOpsResult is the outcome of the pod deletions and creations.
type podOpsResult struct {
	deleted       int32 // successful deletions
	deletedReady  int32 // ready pods among them
	createsFailed int32 // failed or skipped creations
}

// afterPodOps finishes the first half of a sync once the pod operations ran:
// it settles active/ready/terminating, the completion test and the
// Suspended condition.
func (st *syncState) afterPodOps(res podOpsResult) {
	job := st.job
	if st.finishedCond != nil {
		if res.deleted != st.active || !st.satisfiedExpectations {
			st.finishedCond = nil // retry once every pod is accounted for
		}
		st.adjustForDeletions(res)
	} else {
		if st.manageJobCalled {
			st.adjustForDeletions(res)
			st.active += int32(len(st.creates)) - res.createsFailed
		}
		if st.complete() {
			st.finishedCond = newCondition(batch.JobSuccessCriteriaMet, v1.ConditionTrue, batch.JobReasonCompletionsReached, msgCompletionsReached, st.now)
		} else if st.manageJobCalled {
			if _, ev := applySuspendCondition(job, st.now); ev != nil {
				st.events = append(st.events, *ev)
			}
		}
	}
	job.Status.Active = st.active
	job.Status.Ready = &st.ready
	job.Status.Terminating = &st.terminating
}

func (st *syncState) adjustForDeletions(res podOpsResult) {
	st.active -= res.deleted
	st.terminating += res.deleted
	st.ready -= res.deletedReady
}

func (st *syncState) complete() bool {
	if st.job.Spec.Completions == nil {
		return st.succeeded > 0 && st.active == 0
	}
	return st.succeeded >= *st.job.Spec.Completions && st.active == 0
}
