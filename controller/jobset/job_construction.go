package jobset

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// jobName is the deterministic name of the jobIdx-th Job of a replicatedJob.
func jobName(jsName, rjobName string, jobIdx int) string {
	return fmt.Sprintf("%s-%s-%d", jsName, rjobName, jobIdx)
}

// jobsToCreate returns the Jobs of rjob that do not exist in any bucket.
// With BlockingRecreate nothing is created while previous-run Jobs exist.
func jobsToCreate(js *jobsetapi.JobSet, rjob *jobsetapi.ReplicatedJob, jobs *childJobs) []*batchv1.Job {
	blocking := js.Spec.FailurePolicy != nil && js.Spec.FailurePolicy.RestartStrategy == jobsetapi.BlockingRecreate
	if blocking && len(jobs.previous) > 0 {
		return nil
	}
	existing := map[string]bool{}
	for _, job := range jobs.all() {
		existing[job.Name] = true
	}
	var out []*batchv1.Job
	for idx := 0; idx < int(rjob.Replicas); idx++ {
		if !existing[jobName(js.Name, rjob.Name, idx)] {
			out = append(out, constructJob(js, rjob, idx))
		}
	}
	return out
}

// constructJob builds the child Job: the replicatedJob template plus the
// JobSet labels and annotations on both the Job and its pod template, the
// DNS subdomain, suspend, and a controller ownerReference.
func constructJob(js *jobsetapi.JobSet, rjob *jobsetapi.ReplicatedJob, idx int) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(js.Name, rjob.Name, idx),
			Namespace:       js.Namespace,
			Labels:          maps.Clone(rjob.Template.Labels),
			Annotations:     maps.Clone(rjob.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{controllerRef(js)},
		},
		Spec: *rjob.Template.Spec.DeepCopy(),
	}
	applyWebhookJobDefaults(&job.Spec)
	labelAndAnnotate(&job.ObjectMeta, js, rjob, idx)
	labelAndAnnotate(&job.Spec.Template.ObjectMeta, js, rjob, idx)
	if dnsHostnamesEnabled(js) {
		job.Spec.Template.Spec.Subdomain = subdomain(js)
	}
	_, exclusive := job.Annotations[jobsetapi.ExclusiveKey]
	_, nodeSelectorStrategy := job.Annotations[jobsetapi.NodeSelectorStrategyKey]
	if exclusive && nodeSelectorStrategy {
		addNodeSelectorPlacement(job)
	}
	addPodWebhookLabels(&job.Spec.Template)
	job.Spec.Suspend = ptr.To(ptr.Deref(js.Spec.Suspend, false))
	return job
}

// applyWebhookJobDefaults applies the JobSet webhook's per-template
// defaults in case the API server did not: Indexed completion and
// restartPolicy OnFailure.
func applyWebhookJobDefaults(spec *batchv1.JobSpec) {
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	if spec.Template.Spec.RestartPolicy == "" {
		spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
}

// addPodWebhookLabels adds what upstream's pod webhook puts on every JobSet
// pod: the priority label (the priority admission plugin defaults priority
// to 0). Skipped for the node-selector placement strategy, as upstream does.
func addPodWebhookLabels(tmpl *corev1.PodTemplateSpec) {
	if _, ok := tmpl.Annotations[jobsetapi.NodeSelectorStrategyKey]; ok {
		return
	}
	if tmpl.Spec.PriorityClassName != "" && tmpl.Spec.Priority == nil {
		return
	}
	tmpl.Labels[priorityKey] = strconv.Itoa(int(ptr.Deref(tmpl.Spec.Priority, 0)))
}

func addNodeSelectorPlacement(job *batchv1.Job) {
	if job.Spec.Template.Spec.NodeSelector == nil {
		job.Spec.Template.Spec.NodeSelector = map[string]string{}
	}
	job.Spec.Template.Spec.NodeSelector[jobsetapi.NamespacedJobKey] = fmt.Sprintf("%s_%s", job.Namespace, job.Name)
	job.Spec.Template.Spec.Tolerations = append(job.Spec.Template.Spec.Tolerations, corev1.Toleration{
		Key:      jobsetapi.NoScheduleTaintKey,
		Operator: corev1.TolerationOpExists,
		Effect:   corev1.TaintEffectNoSchedule,
	})
}

// jobSetKeys returns the labels upstream writes, identically, as labels and
// annotations on Jobs and pod templates.
func jobSetKeys(js *jobsetapi.JobSet, rjob *jobsetapi.ReplicatedJob, idx int) map[string]string {
	group := groupName(rjob)
	keys := map[string]string{
		jobsetapi.JobSetNameKey:         js.Name,
		jobsetapi.JobSetUIDKey:          string(js.UID),
		jobsetapi.ReplicatedJobNameKey:  rjob.Name,
		restartsKey:                     strconv.Itoa(int(js.Status.Restarts)),
		jobRestartAttemptKey:            strconv.Itoa(int(jobRestarts(js, rjob.Name)[idx])),
		jobsetapi.ReplicatedJobReplicas: strconv.Itoa(int(rjob.Replicas)),
		jobsetapi.GlobalReplicasKey:     strconv.Itoa(int(globalReplicas(js))),
		jobsetapi.JobIndexKey:           strconv.Itoa(idx),
		jobsetapi.JobKey:                jobHashKey(js.Namespace, jobName(js.Name, rjob.Name, idx)),
		jobsetapi.JobGlobalIndexKey:     globalJobIndex(js, rjob.Name, idx),
		jobsetapi.GroupNameKey:          group,
		jobsetapi.GroupReplicasKey:      strconv.Itoa(int(groupReplicas(js, group))),
		jobsetapi.JobGroupIndexKey:      groupJobIndex(js, group, rjob.Name, idx),
	}
	if js.Spec.Coordinator != nil {
		keys[jobsetapi.CoordinatorKey] = coordinatorEndpoint(js)
	}
	return keys
}

// labelAndAnnotate adds the JobSet keys to meta, plus the exclusive
// placement annotations from the JobSet or the replicatedJob template.
func labelAndAnnotate(meta *metav1.ObjectMeta, js *jobsetapi.JobSet, rjob *jobsetapi.ReplicatedJob, idx int) {
	keys := jobSetKeys(js, rjob, idx)
	labels := maps.Clone(meta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	annotations := maps.Clone(meta.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(labels, keys)
	maps.Copy(annotations, keys)
	copyExclusivePlacement(annotations, js.Annotations)
	copyExclusivePlacement(annotations, rjob.Template.Annotations)
	meta.Labels, meta.Annotations = labels, annotations
}

func copyExclusivePlacement(dst, src map[string]string) {
	topology, ok := src[jobsetapi.ExclusiveKey]
	if !ok {
		return
	}
	dst[jobsetapi.ExclusiveKey] = topology
	if v, ok := src[jobsetapi.NodeSelectorStrategyKey]; ok {
		dst[jobsetapi.NodeSelectorStrategyKey] = v
	}
}

// jobHashKey is the SHA-1 hex digest of "<namespace>/<jobName>".
func jobHashKey(namespace, name string) string {
	sum := sha1.Sum([]byte(namespace + "/" + name))
	return hex.EncodeToString(sum[:])
}

func groupName(rjob *jobsetapi.ReplicatedJob) string {
	if rjob.GroupName == "" {
		return defaultGroupName
	}
	return rjob.GroupName
}

func globalReplicas(js *jobsetapi.JobSet) int32 {
	var n int32
	for _, rjob := range js.Spec.ReplicatedJobs {
		n += rjob.Replicas
	}
	return n
}

// globalJobIndex numbers Jobs across all replicatedJobs in spec order.
func globalJobIndex(js *jobsetapi.JobSet, rjobName string, idx int) string {
	seen := 0
	for _, rjob := range js.Spec.ReplicatedJobs {
		if rjob.Name == rjobName {
			return strconv.Itoa(seen + idx)
		}
		seen += int(rjob.Replicas)
	}
	return ""
}

func groupReplicas(js *jobsetapi.JobSet, group string) int32 {
	var n int32
	for i := range js.Spec.ReplicatedJobs {
		if groupName(&js.Spec.ReplicatedJobs[i]) == group {
			n += js.Spec.ReplicatedJobs[i].Replicas
		}
	}
	return n
}

// groupJobIndex numbers Jobs across the replicatedJobs of one group.
func groupJobIndex(js *jobsetapi.JobSet, group, rjobName string, idx int) string {
	seen := 0
	for i := range js.Spec.ReplicatedJobs {
		rjob := &js.Spec.ReplicatedJobs[i]
		if groupName(rjob) != group {
			continue
		}
		if rjob.Name == rjobName {
			return strconv.Itoa(seen + idx)
		}
		seen += int(rjob.Replicas)
	}
	return ""
}
