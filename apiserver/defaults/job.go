package defaults

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Legacy (unprefixed) Job labels that kube-apiserver still writes.
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)

// Job applies batch/v1 defaults (SetDefaults_Job), including the pod
// template's. Call it before PrepareJobForCreate, as kube-apiserver decodes
// (and defaults) before the registry strategy runs.
func Job(job *batchv1.Job) {
	JobSpec(&job.Spec)
	if labels := job.Spec.Template.Labels; labels != nil && len(job.Labels) == 0 {
		job.Labels = copyMap(labels)
	}
}

// JobSpec applies the JobSpec part of SetDefaults_Job and the template
// defaults. It does not touch Job labels.
func JobSpec(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptrTo(int32(1))
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptrTo(int32(1))
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptrTo(int32(math.MaxInt32))
		} else {
			spec.BackoffLimit = ptrTo(int32(6))
		}
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptrTo(false)
	}
	if spec.PodFailurePolicy != nil {
		podFailurePolicy(spec.PodFailurePolicy)
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptrTo(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptrTo(false)
	}
	PodTemplateSpec(&spec.Template)
}

func podFailurePolicy(p *batchv1.PodFailurePolicy) {
	for i := range p.Rules {
		for j := range p.Rules[i].OnPodConditions {
			if p.Rules[i].OnPodConditions[j].Status == "" {
				p.Rules[i].OnPodConditions[j].Status = corev1.ConditionTrue
			}
		}
	}
}

// PrepareJobForCreate does what the Job registry strategy does on create:
// unless manualSelector is true it adds the job-name and controller-uid
// labels (prefixed and legacy) to the template where absent and the
// batch.kubernetes.io/controller-uid matchLabel to the selector; then it
// copies the template labels to a Job without labels, clears status and sets
// generation 1. job.UID must be set. Conflicting
// user-supplied values are left for validation to reject.
func PrepareJobForCreate(job *batchv1.Job) {
	if job.Spec.ManualSelector == nil || !*job.Spec.ManualSelector {
		generateSelector(job)
	}
	// kube-apiserver re-applies SetDefaults_Job when it reads a Job back, so
	// a Job without labels is always seen with its template's labels.
	if labels := job.Spec.Template.Labels; labels != nil && len(job.Labels) == 0 {
		job.Labels = copyMap(labels)
	}
	job.Status = batchv1.JobStatus{}
	job.Generation = 1
}

func generateSelector(job *batchv1.Job) {
	t := &job.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	setIfAbsent(t.Labels, LegacyJobNameLabel, job.Name)
	setIfAbsent(t.Labels, batchv1.JobNameLabel, job.Name)
	setIfAbsent(t.Labels, LegacyControllerUIDLabel, string(job.UID))
	setIfAbsent(t.Labels, batchv1.ControllerUidLabel, string(job.UID))
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	setIfAbsent(job.Spec.Selector.MatchLabels, batchv1.ControllerUidLabel, string(job.UID))
}

// PrepareJobForUpdate does what the registry strategy does on update of the
// main resource: status is kept from the old object and any spec change
// bumps the generation. specChanged is the caller's semantic comparison.
func PrepareJobForUpdate(newJob, oldJob *batchv1.Job, specChanged bool) {
	newJob.Status = oldJob.Status
	newJob.Generation = oldJob.Generation
	if specChanged {
		newJob.Generation = oldJob.Generation + 1
	}
}

func setIfAbsent(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
