package job

import (
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newCondition(t batch.JobConditionType, status v1.ConditionStatus, reason, message string, now time.Time) *batch.JobCondition {
	return &batch.JobCondition{
		Type:               t,
		Status:             status,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

func findCondition(list []batch.JobCondition, t batch.JobConditionType) *batch.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func hasTrueCondition(job *batch.Job, t batch.JobConditionType) bool {
	c := findCondition(job.Status.Conditions, t)
	return c != nil && c.Status == v1.ConditionTrue
}

// IsJobFinished reports whether the Job has Complete=True or Failed=True.
func IsJobFinished(job *batch.Job) bool {
	return hasTrueCondition(job, batch.JobComplete) || hasTrueCondition(job, batch.JobFailed)
}

// ensureConditionStatus appends a condition (unless its status is False) or
// rewrites an existing one whose status, reason or message differ. It
// returns the list and whether it changed.
func ensureConditionStatus(list []batch.JobCondition, t batch.JobConditionType, status v1.ConditionStatus, reason, message string, now time.Time) ([]batch.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return list, false
		}
		*c = *newCondition(t, status, reason, message, now)
		return list, true
	}
	if status == v1.ConditionFalse {
		return list, false
	}
	return append(list, *newCondition(t, status, reason, message, now)), true
}
