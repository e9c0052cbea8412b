// Package defaults applies upstream's API defaults (SetDefaults_* of
// kube-apiserver and the JobSet mutating webhook) to objects on create.
package defaults

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Job applies batch/v1 defaults, including the pod template's.
func Job(job *batchv1.Job) {}

// PrepareJobForCreate generates the selector and the controller-uid /
// job-name labels (unless manualSelector) and clears status. job.UID must be
// set.
func PrepareJobForCreate(job *batchv1.Job) {}

// Pod applies core/v1 pod defaults.
func Pod(pod *corev1.Pod) {}

// PodSpec applies core/v1 pod spec defaults (shared by pods and templates).
func PodSpec(spec *corev1.PodSpec) {}

// JobSet applies the JobSet webhook's defaults.
func JobSet(js *jobsetv1alpha2.JobSet) {}
