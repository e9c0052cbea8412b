package jobset

import (
	"fmt"
	"time"

	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// ttlDecision says whether a finished JobSet must be deleted now, or when to
// look again.
type ttlDecision struct {
	expired      bool
	requeueAfter time.Duration
}

// decideTTL applies ttlSecondsAfterFinished, counted from the Completed or
// Failed condition's lastTransitionTime.
func decideTTL(js *jobsetapi.JobSet, now time.Time) (ttlDecision, error) {
	if js.Spec.TTLSecondsAfterFinished == nil || js.DeletionTimestamp != nil {
		return ttlDecision{}, nil
	}
	finishedAt, err := jobSetFinishTime(js)
	if err != nil {
		return ttlDecision{}, err
	}
	expireAt := finishedAt.Add(time.Duration(*js.Spec.TTLSecondsAfterFinished) * time.Second)
	remaining := expireAt.Sub(now)
	if remaining <= 0 {
		return ttlDecision{expired: true}, nil
	}
	return ttlDecision{requeueAfter: remaining}, nil
}

func jobSetFinishTime(js *jobsetapi.JobSet) (time.Time, error) {
	cond, ok := finishedCondition(js)
	if !ok {
		return time.Time{}, fmt.Errorf("unable to find the status of the finished JobSet %s/%s", js.Namespace, js.Name)
	}
	if cond.LastTransitionTime.IsZero() {
		return time.Time{}, fmt.Errorf("unable to find the time when the JobSet %s/%s finished", js.Namespace, js.Name)
	}
	return cond.LastTransitionTime.Time, nil
}
