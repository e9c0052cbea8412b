package jobset

import (
	"fmt"
	"log/slog"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// childJobs buckets the Jobs a JobSet owns. active, successful and failed
// hold the Jobs of the current run; previous holds Jobs from an earlier
// global or per-Job restart, which are deleted and recreated.
type childJobs struct {
	active     []*batchv1.Job
	successful []*batchv1.Job
	failed     []*batchv1.Job
	previous   []*batchv1.Job
}

// all returns every child Job, in bucket order.
func (c *childJobs) all() []*batchv1.Job {
	out := make([]*batchv1.Job, 0, len(c.active)+len(c.successful)+len(c.failed)+len(c.previous))
	out = append(out, c.active...)
	out = append(out, c.successful...)
	out = append(out, c.failed...)
	return append(out, c.previous...)
}

// isOwnedBy reports whether job's controller ownerReference is this JobSet.
func isOwnedBy(job *batchv1.Job, js *jobsetapi.JobSet) bool {
	ref := metav1.GetControllerOf(job)
	return ref != nil && ref.UID == js.UID && ref.Kind == jobSetKind &&
		ref.APIVersion == jobsetapi.GroupVersion.String()
}

// classifyChildJobs sorts the JobSet's Jobs into buckets. A Job whose
// restart-attempt label is lower than status.restarts, or whose
// job-restart-attempt label is lower than its per-Job restart count, belongs
// to a previous run.
func classifyChildJobs(js *jobsetapi.JobSet, jobs []*batchv1.Job, log *slog.Logger) (*childJobs, error) {
	out := &childJobs{}
	for _, job := range jobs {
		previous, err := isPreviousRun(js, job, log)
		if err != nil {
			return nil, err
		}
		if previous {
			out.previous = append(out.previous, job)
			continue
		}
		switch jobFinishedType(job) {
		case batchv1.JobFailed:
			out.failed = append(out.failed, job)
		case batchv1.JobComplete:
			out.successful = append(out.successful, job)
		default:
			out.active = append(out.active, job)
		}
	}
	return out, nil
}

func isPreviousRun(js *jobsetapi.JobSet, job *batchv1.Job, log *slog.Logger) (bool, error) {
	attempt, err := strconv.Atoi(job.Labels[restartsKey])
	if err != nil {
		return false, fmt.Errorf("job %s: invalid value for label %s, must be integer: %w", job.Name, restartsKey, err)
	}
	if int32(attempt) < js.Status.Restarts {
		return true, nil
	}
	return isPreviousJobRestart(js, job, log)
}

// isPreviousJobRestart compares the per-Job restart attempt label with the
// status' jobRestarts entry for the Job's index.
func isPreviousJobRestart(js *jobsetapi.JobSet, job *batchv1.Job, log *slog.Logger) (bool, error) {
	rjobName, ok := job.Labels[jobsetapi.ReplicatedJobNameKey]
	if !ok {
		return false, fmt.Errorf("job %s: missing label %s", job.Name, jobsetapi.ReplicatedJobNameKey)
	}
	jobIndex, err := strconv.Atoi(job.Labels[jobsetapi.JobIndexKey])
	if err != nil {
		return false, fmt.Errorf("job %s: invalid value for label %s: %w", job.Name, jobsetapi.JobIndexKey, err)
	}
	value, ok := job.Labels[jobRestartAttemptKey]
	if !ok {
		log.Debug("child job has no job restart attempt label", "job", job.Name)
		return false, nil
	}
	attempt, err := strconv.Atoi(value)
	if err != nil {
		return false, fmt.Errorf("job %s: invalid value for label %s, must be integer: %w", job.Name, jobRestartAttemptKey, err)
	}
	restarts := jobRestarts(js, rjobName)
	if jobIndex < 0 || jobIndex >= len(restarts) {
		return false, fmt.Errorf("job index %d is out of bounds for replicated job %s", jobIndex, rjobName)
	}
	return int32(attempt) < restarts[jobIndex], nil
}

// jobFinishedType returns Complete or Failed when that condition is True,
// else "" (FailureTarget and SuccessCriteriaMet do not count).
func jobFinishedType(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}
