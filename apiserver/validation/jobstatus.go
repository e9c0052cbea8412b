package validation

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// statusChecks says which transition rules apply; each is enabled only when
// the fields it reads changed, as in the strategy's getStatusValidationOptions
// with JobManagedBy on.
type statusChecks struct {
	decreasingSucceeded, invalidCompleted, invalidFailed, completedForNonIndexed     bool
	failedWithoutBLPI, overlap, finishedActive, finishedNoStart, finishedUncounted   bool
	startTimeUpdate, completionBeforeStart, notCompleteWithTime, completeWithoutTime bool
	completeAndFailed, completeAndFailureTarget                                      bool
}

func statusChecksFor(newJob, oldJob *batchv1.Job) statusChecks {
	n, o := &newJob.Status, &oldJob.Status
	finishedChanged := isFinished(oldJob) != isFinished(newJob)
	completeChanged := isTrue(o.Conditions, batchv1.JobComplete) != isTrue(n.Conditions, batchv1.JobComplete)
	failedChanged := isTrue(o.Conditions, batchv1.JobFailed) != isTrue(n.Conditions, batchv1.JobFailed)
	targetChanged := isTrue(o.Conditions, batchv1.JobFailureTarget) != isTrue(n.Conditions, batchv1.JobFailureTarget)
	completedChanged := o.CompletedIndexes != n.CompletedIndexes
	failedIdxChanged := !ptr.Equal(o.FailedIndexes, n.FailedIndexes)
	startChanged := !timeEqual(o.StartTime, n.StartTime)
	completionChanged := !timeEqual(o.CompletionTime, n.CompletionTime)
	// A Job being resumed (Suspended True -> False) gets a fresh startTime from
	// the controller in the same write (kubernetes#134521).
	resuming := isTrue(o.Conditions, batchv1.JobSuspended) && hasFalse(n.Conditions, batchv1.JobSuspended)
	return statusChecks{
		decreasingSucceeded:      !isIndexed(&newJob.Spec) || !ptr.Equal(newJob.Spec.Completions, newJob.Spec.Parallelism),
		invalidCompleted:         completedChanged,
		invalidFailed:            failedIdxChanged,
		completedForNonIndexed:   completedChanged,
		failedWithoutBLPI:        failedIdxChanged,
		overlap:                  failedIdxChanged || completedChanged,
		finishedActive:           finishedChanged || o.Active != n.Active,
		finishedNoStart:          finishedChanged || startChanged,
		finishedUncounted:        finishedChanged || !apiequality.Semantic.DeepEqual(o.UncountedTerminatedPods, n.UncountedTerminatedPods),
		startTimeUpdate:          startChanged && !resuming,
		completionBeforeStart:    startChanged || completionChanged,
		notCompleteWithTime:      completeChanged || completionChanged,
		completeWithoutTime:      completeChanged || completionChanged,
		completeAndFailed:        completeChanged || failedChanged,
		completeAndFailureTarget: completeChanged || targetChanged,
	}
}

// ValidateJobStatusUpdate checks an update of jobs/status with the rules
// kube-apiserver enforces (JobManagedBy on).
func ValidateJobStatusUpdate(newJob, oldJob *batchv1.Job) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newJob.ObjectMeta, &oldJob.ObjectMeta, field.NewPath("metadata"))
	c := statusChecksFor(newJob, oldJob)
	p := field.NewPath("status")
	allErrs = append(allErrs, validateJobStatus(newJob, p, c)...)
	allErrs = append(allErrs, validateJobStatusTransitions(newJob, oldJob, p, c)...)
	return allErrs
}

func validateJobStatusTransitions(newJob, oldJob *batchv1.Job, p *field.Path, c statusChecks) field.ErrorList {
	var allErrs field.ErrorList
	n, o := &newJob.Status, &oldJob.Status
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if isTrue(o.Conditions, t) && !isTrue(n.Conditions, t) {
			allErrs = append(allErrs, conditionsErr(p, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	if n.Failed < o.Failed {
		allErrs = append(allErrs, field.Invalid(p.Child("failed"), n.Failed, "cannot decrease the failed counter"))
	}
	if c.decreasingSucceeded && n.Succeeded < o.Succeeded {
		allErrs = append(allErrs, field.Invalid(p.Child("succeeded"), n.Succeeded, "cannot decrease the succeeded counter"))
	}
	if n.CompletionTime != nil && o.CompletionTime != nil && !timeEqual(n.CompletionTime, o.CompletionTime) {
		allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), n.CompletionTime, "completionTime cannot be mutated"))
	}
	if c.startTimeUpdate && o.StartTime != nil && !ptr.Deref(newJob.Spec.Suspend, false) {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if isTrue(o.Conditions, batchv1.JobSuccessCriteriaMet) && !isTrue(n.Conditions, batchv1.JobSuccessCriteriaMet) {
		allErrs = append(allErrs, conditionsErr(p, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if isTrue(o.Conditions, batchv1.JobComplete) && !isTrue(o.Conditions, batchv1.JobSuccessCriteriaMet) &&
		isTrue(n.Conditions, batchv1.JobSuccessCriteriaMet) {
		allErrs = append(allErrs, conditionsErr(p, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return allErrs
}

func conditionsErr(p *field.Path, msg string) *field.Error {
	return field.Invalid(p.Child("conditions"), field.OmitValueType{}, msg)
}

func validateJobStatus(job *batchv1.Job, p *field.Path, c statusChecks) field.ErrorList {
	s := &job.Status
	allErrs := validateStatusCounters(s, p)
	allErrs = append(allErrs, validateUncounted(s.UncountedTerminatedPods, p.Child("uncountedTerminatedPods"))...)
	complete := isTrue(s.Conditions, batchv1.JobComplete)
	failed := isTrue(s.Conditions, batchv1.JobFailed)
	target := isTrue(s.Conditions, batchv1.JobFailureTarget)
	scm := isTrue(s.Conditions, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	if c.completeAndFailed && complete && failed {
		allErrs = append(allErrs, conditionsErr(p, "cannot set Complete=True and Failed=true conditions"))
	}
	if c.completeAndFailureTarget && complete && target {
		allErrs = append(allErrs, conditionsErr(p, "cannot set Complete=True and FailureTarget=true conditions"))
	}
	if c.notCompleteWithTime && s.CompletionTime != nil && !complete {
		allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if c.completeWithoutTime && s.CompletionTime == nil && complete {
		allErrs = append(allErrs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if c.completionBeforeStart && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be set before startTime"))
	}
	if c.finishedActive && s.Active > 0 && finished {
		allErrs = append(allErrs, field.Invalid(p.Child("active"), s.Active, "active>0 is invalid for finished job"))
	}
	if c.finishedNoStart && s.StartTime == nil && finished {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if u := s.UncountedTerminatedPods; c.finishedUncounted && finished && u != nil && len(u.Failed)+len(u.Succeeded) > 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("uncountedTerminatedPods"), u, "uncountedTerminatedPods needs to be empty for finished job"))
	}
	allErrs = append(allErrs, validateStatusIndexes(job, p, c)...)
	if scm && failed {
		allErrs = append(allErrs, conditionsErr(p, "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if scm && target {
		allErrs = append(allErrs, conditionsErr(p, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if job.Spec.SuccessPolicy != nil && !scm && complete {
		allErrs = append(allErrs, conditionsErr(p, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}
	return allErrs
}

func validateStatusCounters(s *batchv1.JobStatus, p *field.Path) field.ErrorList {
	allErrs := validateNonnegative(int64(s.Active), p.Child("active"))
	allErrs = append(allErrs, validateNonnegative(int64(s.Succeeded), p.Child("succeeded"))...)
	allErrs = append(allErrs, validateNonnegative(int64(s.Failed), p.Child("failed"))...)
	if s.Ready != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.Terminating), p.Child("terminating"))...)
	}
	return allErrs
}

func validateUncounted(u *batchv1.UncountedTerminatedPods, p *field.Path) field.ErrorList {
	if u == nil {
		return nil
	}
	var allErrs field.ErrorList
	seen := sets.New[types.UID]()
	check := func(list []types.UID, lp *field.Path) {
		for i, uid := range list {
			switch {
			case uid == "":
				allErrs = append(allErrs, field.Invalid(lp.Index(i), uid, "must not be empty"))
			case seen.Has(uid):
				allErrs = append(allErrs, field.Duplicate(lp.Index(i), uid))
			default:
				seen.Insert(uid)
			}
		}
	}
	check(u.Succeeded, p.Child("succeeded"))
	check(u.Failed, p.Child("failed"))
	return allErrs
}

func validateStatusIndexes(job *batchv1.Job, p *field.Path, c statusChecks) field.ErrorList {
	var allErrs field.ErrorList
	s, spec := &job.Status, &job.Spec
	if c.invalidCompleted && spec.Completions != nil {
		if _, err := ValidateIndexesFormat(s.CompletedIndexes, *spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "error parsing completedIndexes: "+err.Error()))
		}
	}
	if c.invalidFailed && spec.Completions != nil && spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
		if _, err := ValidateIndexesFormat(*s.FailedIndexes, *spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), s.FailedIndexes, "error parsing failedIndexes: "+err.Error()))
		}
	}
	if c.completedForNonIndexed && s.CompletedIndexes != "" && !isIndexed(spec) {
		allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if c.failedWithoutBLPI && spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
		allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if c.overlap && spec.Completions != nil && s.FailedIndexes != nil {
		if err := failedOverlapsCompleted(s.CompletedIndexes, *s.FailedIndexes, *spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, err.Error()))
		}
	}
	return allErrs
}

func isTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasFalse(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

func isFinished(job *batchv1.Job) bool {
	return isTrue(job.Status.Conditions, batchv1.JobComplete) || isTrue(job.Status.Conditions, batchv1.JobFailed)
}

func timeEqual(a, b interface{ IsZero() bool }) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
