package job

import (
	"fmt"
	"strconv"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var jobKind = batch.SchemeGroupVersion.WithKind("Job")

// podCreate is one pod the controller means to create.
type podCreate struct {
	index int // unknownIndex for NonIndexed Jobs
	pod   *v1.Pod
}

// newControllerRef is the ownerReference written on the Job's pods.
func newControllerRef(job *batch.Job) *metav1.OwnerReference {
	return &metav1.OwnerReference{
		APIVersion:         jobKind.GroupVersion().String(),
		Kind:               jobKind.Kind,
		Name:               job.Name,
		UID:                job.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// baseTemplate is the Job's template with the tracking finalizer and, for
// Indexed Jobs, the JOB_COMPLETION_INDEX variable.
func baseTemplate(job *batch.Job) *v1.PodTemplateSpec {
	t := job.Spec.Template.DeepCopy()
	if isIndexed(job) {
		for i := range t.Spec.InitContainers {
			addIndexEnv(&t.Spec.InitContainers[i])
		}
		for i := range t.Spec.Containers {
			addIndexEnv(&t.Spec.Containers[i])
		}
	}
	if !hasString(t.Finalizers, batch.JobTrackingFinalizer) {
		t.Finalizers = append(t.Finalizers, batch.JobTrackingFinalizer)
	}
	return t
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func addIndexEnv(c *v1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnvName {
			return
		}
	}
	c.Env = append(c.Env, v1.EnvVar{
		Name: completionIndexEnvName,
		ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batch.JobCompletionIndexAnnotation),
		}},
	})
}

// buildPod makes the pod for one creation. replaced is the failed pod of the
// same index whose failure counts carry over (backoffLimitPerIndex only).
func buildPod(job *batch.Job, base *v1.PodTemplateSpec, index int, replaced *v1.Pod) *v1.Pod {
	t := base.DeepCopy()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    job.Name + "-",
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*newControllerRef(job)},
		},
		Spec: t.Spec,
	}
	if index == unknownIndex {
		return pod
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	ix := strconv.Itoa(index)
	pod.Annotations[batch.JobCompletionIndexAnnotation] = ix
	pod.Labels[batch.JobCompletionIndexAnnotation] = ix
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	pod.GenerateName = podGenerateNameWithIndex(job.Name, index)
	if job.Spec.BackoffLimitPerIndex != nil {
		counted, ignored := nextIndexFailureCounts(job, replaced)
		pod.Annotations[batch.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
		if ignored > 0 {
			pod.Annotations[batch.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
	return pod
}

// nextIndexFailureCounts derives the failure-count annotations of a
// replacement pod from the failed pod it replaces.
func nextIndexFailureCounts(job *batch.Job, replaced *v1.Pod) (counted, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	counted, ignored = indexFailureCount(replaced), indexIgnoredFailureCount(replaced)
	if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).count {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}
