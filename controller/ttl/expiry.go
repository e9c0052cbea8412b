package ttl

import (
	"fmt"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// needsCleanup: the Job has a TTL, is finished and not already being deleted.
func needsCleanup(job *batch.Job) bool {
	return job.Spec.TTLSecondsAfterFinished != nil && job.DeletionTimestamp == nil && finished(job)
}

func finished(job *batch.Job) bool {
	_, ok := finishTime(job)
	return ok
}

// finishTime is the lastTransitionTime of the Complete or Failed condition.
func finishTime(job *batch.Job) (time.Time, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batch.JobComplete || c.Type == batch.JobFailed) && c.Status == v1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// timeLeft is how long until the Job expires (<= 0: expired). The expiry
// time is returned for logging and metrics.
func timeLeft(job *batch.Job, now time.Time) (left time.Duration, expireAt time.Time, err error) {
	if !needsCleanup(job) {
		return 0, time.Time{}, fmt.Errorf("job %s/%s is not a TTL cleanup candidate", job.Namespace, job.Name)
	}
	at, _ := finishTime(job)
	if at.IsZero() {
		return 0, time.Time{}, fmt.Errorf("job %s/%s has a terminal condition without lastTransitionTime", job.Namespace, job.Name)
	}
	expireAt = at.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	return expireAt.Sub(now), expireAt, nil
}
