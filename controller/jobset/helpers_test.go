package jobset

import (
	"io"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// jobSetBuilder builds JobSets the way the webhook would have defaulted them.
type jobSetBuilder struct{ js *jobsetapi.JobSet }

func makeJobSet(name string) *jobSetBuilder {
	return &jobSetBuilder{js: &jobsetapi.JobSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: jobsetapi.GroupVersion.String(), Kind: jobSetKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: jobsetapi.JobSetSpec{
			SuccessPolicy: &jobsetapi.SuccessPolicy{Operator: jobsetapi.OperatorAll},
			StartupPolicy: &jobsetapi.StartupPolicy{StartupPolicyOrder: jobsetapi.AnyOrder},
			Network: &jobsetapi.Network{
				EnableDNSHostnames:       ptr.To(true),
				PublishNotReadyAddresses: ptr.To(true),
			},
		},
	}}
}

func (b *jobSetBuilder) rjob(name string, replicas, parallelism int32) *jobSetBuilder {
	b.js.Spec.ReplicatedJobs = append(b.js.Spec.ReplicatedJobs, jobsetapi.ReplicatedJob{
		Name: name, GroupName: defaultGroupName, Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism:    ptr.To(parallelism),
			Completions:    ptr.To(parallelism),
			BackoffLimit:   ptr.To[int32](0),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: name, Image: "bash"}},
			}},
		}},
	})
	return b
}

func (b *jobSetBuilder) failurePolicy(maxRestarts int32, rules ...jobsetapi.FailurePolicyRule) *jobSetBuilder {
	for i := range rules {
		if rules[i].Name == "" {
			rules[i].Name = "failurePolicyRule" + string(rune('0'+i))
		}
	}
	b.js.Spec.FailurePolicy = &jobsetapi.FailurePolicy{MaxRestarts: maxRestarts, Rules: rules}
	return b
}

func (b *jobSetBuilder) successPolicy(op jobsetapi.Operator, targets ...string) *jobSetBuilder {
	b.js.Spec.SuccessPolicy = &jobsetapi.SuccessPolicy{Operator: op, TargetReplicatedJobs: targets}
	return b
}

func (b *jobSetBuilder) suspend(s bool) *jobSetBuilder {
	b.js.Spec.Suspend = ptr.To(s)
	return b
}

func (b *jobSetBuilder) inOrder() *jobSetBuilder {
	b.js.Spec.StartupPolicy = &jobsetapi.StartupPolicy{StartupPolicyOrder: jobsetapi.InOrder}
	return b
}

func (b *jobSetBuilder) restarts(n int32) *jobSetBuilder {
	b.js.Status.Restarts = n
	return b
}

func (b *jobSetBuilder) obj() *jobsetapi.JobSet { return b.js }

// childJob constructs the idx-th Job of rjobName the way the controller would.
func childJob(js *jobsetapi.JobSet, rjobName string, idx int) *batchv1.Job {
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == rjobName {
			return constructJob(js, &js.Spec.ReplicatedJobs[i], idx)
		}
	}
	panic("unknown replicatedJob " + rjobName)
}

func failedJob(job *batchv1.Job, reason, message string, at time.Time) *batchv1.Job {
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{
		Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(at),
	})
	return job
}

func completedJob(job *batchv1.Job) *batchv1.Job {
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{
		Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0),
	})
	job.Status.Succeeded = ptr.Deref(job.Spec.Completions, 1)
	return job
}

func readyJob(job *batchv1.Job) *batchv1.Job {
	job.Status.Ready = job.Spec.Parallelism
	job.Status.Active = *job.Spec.Parallelism
	return job
}

func findCond(js *jobsetapi.JobSet, t jobsetapi.JobSetConditionType) *metav1.Condition {
	for i := range js.Status.Conditions {
		if js.Status.Conditions[i].Type == string(t) {
			return &js.Status.Conditions[i]
		}
	}
	return nil
}

func jobNames(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}
