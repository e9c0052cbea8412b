package jobset

import (
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func jobSetSuspended(js *jobsetapi.JobSet) bool {
	return ptr.Deref(js.Spec.Suspend, false)
}

func jobSuspended(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.Suspend, false)
}

// suspendJobs suspends every active child Job and sets Suspended=True.
func (p *plan) suspendJobs(active []*batchv1.Job, now time.Time) {
	for _, job := range active {
		if jobSuspended(job) {
			continue
		}
		c := job.DeepCopy()
		c.Spec.Suspend = ptr.To(true)
		p.jobsToSuspend = append(p.jobsToSuspend, c)
	}
	p.setSuspended(now)
}

// resumeJobsIfNecessary resumes suspended active Jobs, replicatedJob by
// replicatedJob, honouring dependsOn and the InOrder startup policy, then
// sets Suspended=False.
func (p *plan) resumeJobsIfNecessary(active []*batchv1.Job, statuses []jobsetapi.ReplicatedJobStatus, now time.Time) {
	js := p.js
	byRJob := map[string][]*batchv1.Job{}
	for _, job := range active {
		name := job.Labels[jobsetapi.ReplicatedJobNameKey]
		byRJob[name] = append(byRJob[name], job)
	}
	replicas := map[string]int32{}
	for i := range js.Spec.ReplicatedJobs {
		rjob := &js.Spec.ReplicatedJobs[i]
		replicas[rjob.Name] = rjob.Replicas
		if !dependencyReachedStatus(*rjob, replicas, statuses) {
			continue
		}
		status := findReplicatedJobStatus(statuses, rjob.Name)
		if inOrderStartup(js) && allReplicasStarted(rjob.Replicas, status) {
			continue
		}
		for _, job := range byRJob[rjob.Name] {
			if jobSuspended(job) {
				p.jobsToResume = append(p.jobsToResume, resumedJob(job, &rjob.Template.Spec.Template))
			}
		}
		if inOrderStartup(js) {
			p.setStartupInProgress(now)
			return
		}
	}
	p.setResumed(now)
}

// resumedJob returns a copy of job with suspend=false and the pod template's
// labels, annotations, nodeSelector, tolerations and schedulingGates merged
// in from the replicatedJob (values may have changed while suspended).
func resumedJob(job *batchv1.Job, tmpl *corev1.PodTemplateSpec) *batchv1.Job {
	c := job.DeepCopy()
	if c.Labels[jobsetapi.ReplicatedJobNameKey] != "" {
		spec := &c.Spec.Template
		spec.Labels = mergeMaps(spec.Labels, tmpl.Labels)
		spec.Annotations = mergeMaps(spec.Annotations, tmpl.Annotations)
		spec.Spec.NodeSelector = mergeMaps(spec.Spec.NodeSelector, tmpl.Spec.NodeSelector)
		spec.Spec.Tolerations = mergeSlices(spec.Spec.Tolerations, tmpl.Spec.Tolerations)
		spec.Spec.SchedulingGates = mergeSlices(spec.Spec.SchedulingGates, tmpl.Spec.SchedulingGates)
	}
	c.Spec.Suspend = ptr.To(false)
	return c
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, src)
	return out
}

func mergeSlices[T any](dst, src []T) []T {
	out := slices.Clone(dst)
	for _, item := range src {
		if !slices.ContainsFunc(out, func(x T) bool { return apiequality.Semantic.DeepEqual(x, item) }) {
			out = append(out, item)
		}
	}
	return out
}
