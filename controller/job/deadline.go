package job

import (
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// pastActiveDeadline: the Job has run (unsuspended, since startTime) for at
// least activeDeadlineSeconds.
func pastActiveDeadline(job *batch.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// deadlineRequeue is when to look again at a Job with a deadline that has
// not passed yet (0: no deadline to watch).
func deadlineRequeue(job *batch.Job, now time.Time) time.Duration {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return 0
	}
	return time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(job.Status.StartTime.Time)
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure, container restarts
// of pending and running pods count against backoffLimit.
func pastBackoffLimitOnFailure(job *batch.Job, pods []*v1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != v1.PodRunning && p.Status.Phase != v1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}
