package defaults

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// DefaultJobSetGroupName is the CRD default of replicatedJobs[].groupName.
const DefaultJobSetGroupName = "default"

// JobSet applies the JobSet CRD's schema defaults that survive a typed
// decode (groupName, failurePolicy.restartStrategy, retention whenDeleted)
// and the JobSet mutating webhook's defaults. replicas' CRD default of 1
// cannot be told apart from an explicit 0 after decoding; apply it on the
// raw object with JobSetUnstructured before decoding.
func JobSet(js *jobsetv1alpha2.JobSet) {
	spec := &js.Spec
	if spec.SuccessPolicy == nil {
		spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll}
	}
	if spec.StartupPolicy == nil {
		spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.AnyOrder}
	}
	for i := range spec.ReplicatedJobs {
		replicatedJob(&spec.ReplicatedJobs[i])
	}
	if spec.Network == nil {
		spec.Network = &jobsetv1alpha2.Network{}
	}
	if spec.Network.EnableDNSHostnames == nil {
		spec.Network.EnableDNSHostnames = ptrTo(true)
	}
	if spec.Network.PublishNotReadyAddresses == nil {
		spec.Network.PublishNotReadyAddresses = ptrTo(true)
	}
	if spec.FailurePolicy != nil {
		failurePolicy(spec.FailurePolicy)
	}
	for i := range spec.VolumeClaimPolicies {
		p := &spec.VolumeClaimPolicies[i]
		if p.RetentionPolicy == nil {
			p.RetentionPolicy = &jobsetv1alpha2.VolumeRetentionPolicy{}
		}
		if p.RetentionPolicy.WhenDeleted == nil {
			p.RetentionPolicy.WhenDeleted = ptrTo(jobsetv1alpha2.RetentionPolicyDelete)
		}
	}
}

func replicatedJob(rj *jobsetv1alpha2.ReplicatedJob) {
	if rj.GroupName == "" {
		rj.GroupName = DefaultJobSetGroupName
	}
	spec := &rj.Template.Spec
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
	}
	if spec.Template.Spec.RestartPolicy == "" {
		spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	// The JobSet CRD embeds the Job template without kube-apiserver's
	// built-in defaults; those are applied to each child Job when the
	// controller creates it (JobSpec below), not to the JobSet object.
}

func failurePolicy(fp *jobsetv1alpha2.FailurePolicy) {
	if fp.RestartStrategy == "" {
		fp.RestartStrategy = jobsetv1alpha2.Recreate
	}
	for i := range fp.Rules {
		if fp.Rules[i].Name == "" {
			fp.Rules[i].Name = fmt.Sprintf("failurePolicyRule%d", i)
		}
	}
}

// JobSetChildJobs returns a copy of the JobSet whose replicatedJob templates
// carry the batch/v1 Job defaults kube-apiserver applies to each child Job
// (what a client sees on the created Jobs). The JobSet itself keeps only the
// webhook defaults, as upstream stores it.
func JobSetChildJobs(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	out := js.DeepCopy()
	for i := range out.Spec.ReplicatedJobs {
		JobSpec(&out.Spec.ReplicatedJobs[i].Template.Spec)
	}
	return out
}

// JobSetUnstructured applies the CRD-schema defaults that must be set on the
// raw object before a typed decode: replicatedJobs[].replicas=1 when absent,
// replicatedJobs[].groupName="default" when absent.
func JobSetUnstructured(obj map[string]interface{}) {
	spec, _ := obj["spec"].(map[string]interface{})
	if spec == nil {
		return
	}
	rjobs, _ := spec["replicatedJobs"].([]interface{})
	for _, item := range rjobs {
		rj, _ := item.(map[string]interface{})
		if rj == nil {
			continue
		}
		if _, ok := rj["replicas"]; !ok {
			rj["replicas"] = int64(1)
		}
		if _, ok := rj["groupName"]; !ok {
			rj["groupName"] = DefaultJobSetGroupName
		}
	}
}
