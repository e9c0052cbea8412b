package jobset

import (
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// observed is what one reconcile read: the JobSet, the Jobs it controls
// and whether its headless Service exists.
type observed struct {
	js            *jobsetapi.JobSet
	jobs          []*batchv1.Job
	serviceExists bool
}

// decide computes the plan for one JobSet. It is pure: it depends only on
// what was observed and on now. The steps follow upstream's reconcile.
func decide(obs observed, now time.Time, log *slog.Logger) (*plan, error) {
	p := &plan{js: obs.js.DeepCopy()}
	js := p.js
	jobs, err := classifyChildJobs(js, obs.jobs, log)
	if err != nil {
		return nil, err
	}
	statuses := calculateReplicatedJobStatuses(js, jobs, log)
	if !replicatedJobStatusesEqual(js.Status.ReplicatedJobsStatus, statuses) {
		js.Status.ReplicatedJobsStatus = statuses
		p.markStatusChanged()
	}
	if jobSetFinished(js) {
		return p, p.cleanUpFinished(jobs, now)
	}
	p.deleteJobs = notDeleting(jobs.previous)
	if !jobSetSuspended(js) && allJobsReady(js, statuses) {
		p.setRestartingFalse(reasonJobsReady, messageJobsReady, now)
	}
	if len(jobs.failed) > 0 {
		return p, p.executeFailurePolicy(jobs.failed, now, log)
	}
	if len(jobs.successful) > 0 && successPolicyMet(js, jobs.successful) {
		p.setCompleted(now)
		return p, nil
	}
	if dnsHostnamesEnabled(js) && !obs.serviceExists {
		p.createService = headlessService(js)
	}
	p.reconcileReplicatedJobs(jobs, statuses, now)
	if jobSetSuspended(js) {
		p.suspendJobs(jobs.active, now)
	} else {
		p.resumeJobsIfNecessary(jobs.active, statuses, now)
	}
	return p, nil
}

// cleanUpFinished deletes the still-active Jobs of a finished JobSet and
// applies its TTL.
func (p *plan) cleanUpFinished(jobs *childJobs, now time.Time) error {
	p.deleteJobs = notDeleting(jobs.active)
	ttl, err := decideTTL(p.js, now)
	if err != nil {
		return err
	}
	p.deleteJobSet = ttl.expired
	p.requeueAfter = ttl.requeueAfter
	return nil
}

// reconcileReplicatedJobs plans the missing Jobs of each replicatedJob,
// honouring dependsOn and the InOrder startup policy.
func (p *plan) reconcileReplicatedJobs(jobs *childJobs, statuses []jobsetapi.ReplicatedJobStatus, now time.Time) {
	js := p.js
	inOrder := !jobSetSuspended(js) && inOrderStartup(js)
	replicas := map[string]int32{}
	for i := range js.Spec.ReplicatedJobs {
		rjob := &js.Spec.ReplicatedJobs[i]
		replicas[rjob.Name] = rjob.Replicas
		if !dependencyReachedStatus(*rjob, replicas, statuses) {
			continue
		}
		if inOrder && allReplicasStarted(rjob.Replicas, findReplicatedJobStatus(statuses, rjob.Name)) {
			continue
		}
		p.createJobs = append(p.createJobs, jobsToCreate(js, rjob, jobs)...)
		if inOrder {
			p.setStartupInProgress(now)
			return
		}
	}
	if inOrder {
		p.setStartupCompleted(now)
	}
}

func notDeleting(jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, job := range jobs {
		if job.DeletionTimestamp == nil {
			out = append(out, job)
		}
	}
	return out
}
