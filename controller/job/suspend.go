package job

import (
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func isSuspended(job *batch.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}

// applySuspendCondition keeps the Suspended condition in line with
// spec.suspend. On resume it resets startTime, so activeDeadlineSeconds
// counts continuous active time. It returns the event to emit, if any.
func applySuspendCondition(job *batch.Job, now time.Time) (changed bool, ev *event) {
	if isSuspended(job) {
		job.Status.Conditions, changed = ensureConditionStatus(job.Status.Conditions, batch.JobSuspended, v1.ConditionTrue, reasonSuspended, msgSuspended, now)
		if changed {
			ev = &event{kind: v1.EventTypeNormal, reason: eventSuspended, message: msgSuspended}
		}
		return changed, ev
	}
	job.Status.Conditions, changed = ensureConditionStatus(job.Status.Conditions, batch.JobSuspended, v1.ConditionFalse, reasonResumed, msgResumed, now)
	if changed {
		ev = &event{kind: v1.EventTypeNormal, reason: eventResumed, message: msgResumed}
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
	return changed, ev
}
