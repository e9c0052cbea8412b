package validation

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func validJobSet() *jobsetv1alpha2.JobSet {
	rj := func(name string, replicas int32) jobsetv1alpha2.ReplicatedJob {
		return jobsetv1alpha2.ReplicatedJob{Name: name, GroupName: "default", Replicas: replicas,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: ptr.To(int32(2)), Parallelism: ptr.To(int32(2)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
					Containers: []corev1.Container{{Name: "main", Image: "python:3.11"}}}},
			}}}
	}
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "default", ResourceVersion: "1"},
		Spec: jobsetv1alpha2.JobSetSpec{
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{rj("leader", 1), rj("workers", 2)},
			SuccessPolicy:  &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll},
			StartupPolicy:  &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.AnyOrder},
			Network:        &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), PublishNotReadyAddresses: ptr.To(true)},
		},
	}
}

func TestValidateJobSet(t *testing.T) {
	rule := func(name string, action jobsetv1alpha2.FailurePolicyAction) jobsetv1alpha2.FailurePolicyRule {
		return jobsetv1alpha2.FailurePolicyRule{Name: name, Action: action}
	}
	cases := []struct {
		name   string
		mutate func(*jobsetv1alpha2.JobSet)
		want   []string
	}{
		{"valid", func(*jobsetv1alpha2.JobSet) {}, nil},
		{"unknown action (CRD enum)", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{rule("r", "RestartTheWorld")}}
		}, []string{`spec.failurePolicy.rules[0].action: Unsupported value: "RestartTheWorld": supported values: "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts"`}},
		{"RecreateJob is accepted as an alias of RestartJob", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{rule("r", "RecreateJob")}}
		}, nil},
		{"failure policy targets and reasons", func(js *jobsetv1alpha2.JobSet) {
			r := rule("failurePolicyRule0", jobsetv1alpha2.RestartJobSet)
			r.TargetReplicatedJobs = []string{"nope"}
			r.OnJobFailureReasons = []string{"Oops"}
			js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{r}}
		}, []string{
			"<nil>: Internal error: invalid replicatedJob name 'nope' in failure policy does not appear in .spec.ReplicatedJobs",
			"<nil>: Internal error: invalid job failure reason 'Oops' in failure policy is not a recognized job failure reason"}},
		{"rule names", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{
				rule("a", jobsetv1alpha2.FailJobSet), rule("a", jobsetv1alpha2.FailJobSet), rule("1bad", jobsetv1alpha2.FailJobSet)}}
		}, []string{
			"<nil>: Internal error: invalid failure policy rule name '1bad', a failure policy rule name must start with an alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
			"<nil>: Internal error: rule names are not unique, rules with indices [0 1] all have the same name 'a'"}},
		{"dependsOn first and unknown", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.ReplicatedJobs[0].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "workers", Status: jobsetv1alpha2.DependencyReady}}
		}, []string{
			"<nil>: Internal error: DependsOn can't be set for the first ReplicatedJob",
			"<nil>: Internal error: replicatedJob: leader cannot depend on replicatedJob: workers"}},
		{"success policy target", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.SuccessPolicy.TargetReplicatedJobs = []string{"x"}
		}, []string{"<nil>: Internal error: invalid replicatedJob name 'x' does not appear in .spec.ReplicatedJobs"}},
		{"InOrder with dependsOn (CEL)", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.StartupPolicy.StartupPolicyOrder = jobsetv1alpha2.InOrder
			js.Spec.ReplicatedJobs[1].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "leader", Status: jobsetv1alpha2.DependencyReady}}
		}, []string{"spec: Invalid value: StartupPolicy and DependsOn APIs are mutually exclusive"}},
		{"long name", func(js *jobsetv1alpha2.JobSet) {
			js.Name = "a-very-long-jobset-name-that-goes-on-and-on-and-on-x"
		}, []string{
			`spec.replicatedJobs[0].name: Invalid value: "a-very-long-jobset-name-that-goes-on-and-on-and-on-x-leader-0": JobSet name is too long, pod names generated for this JobSet will exceed 63 characters`,
			`spec.replicatedJobs[1].name: Invalid value: "a-very-long-jobset-name-that-goes-on-and-on-and-on-x-workers-1": JobSet name is too long, pod names generated for this JobSet will exceed 63 characters`}},
		{"coordinator", func(js *jobsetv1alpha2.JobSet) {
			js.Spec.Coordinator = &jobsetv1alpha2.Coordinator{ReplicatedJob: "workers", JobIndex: 5}
		}, []string{"<nil>: Internal error: coordinator job index 5 is invalid for replicatedJob workers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := validJobSet()
			tc.mutate(js)
			assertErrors(t, ValidateJobSet(js), tc.want)
		})
	}
}

func TestValidateJobSetRendersAsUpstream(t *testing.T) {
	js := validJobSet()
	js.Spec.ReplicatedJobs[0].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "workers", Status: jobsetv1alpha2.DependencyReady}}
	err := apierrors.NewInvalid(schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}, js.Name, ValidateJobSet(js))
	want := `JobSet.jobset.x-k8s.io "js" is invalid: [<nil>: Internal error: DependsOn can't be set for the first ReplicatedJob, <nil>: Internal error: replicatedJob: leader cannot depend on replicatedJob: workers]`
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err.Error(), want)
	}
}

func TestValidateJobSetUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    func(*jobsetv1alpha2.JobSet)
		mutate func(*jobsetv1alpha2.JobSet)
		want   []string
	}{
		{"suspend", nil, func(js *jobsetv1alpha2.JobSet) { js.Spec.Suspend = ptr.To(true) }, nil},
		{"template labels while suspended", func(js *jobsetv1alpha2.JobSet) { js.Spec.Suspend = ptr.To(true) },
			func(js *jobsetv1alpha2.JobSet) {
				js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels = map[string]string{"q": "1"}
			}, nil},
		{"replicas immutable", nil, func(js *jobsetv1alpha2.JobSet) { js.Spec.ReplicatedJobs[1].Replicas = 3 }, nil},
		{"managedBy immutable", nil, func(js *jobsetv1alpha2.JobSet) { js.Spec.ManagedBy = ptr.To("x.io/y") }, []string{
			`spec.managedBy: Invalid value: "x.io/y": field is immutable`}},
		{"successPolicy immutable (CEL)", nil, func(js *jobsetv1alpha2.JobSet) {
			js.Spec.SuccessPolicy.Operator = jobsetv1alpha2.OperatorAny
		}, []string{`spec.successPolicy: Invalid value: {"operator":"Any"}: Value is immutable`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validJobSet()
			if tc.old != nil {
				tc.old(old)
			}
			js := old.DeepCopy()
			tc.mutate(js)
			errs := ValidateJobSetUpdate(js, old)
			if tc.name == "replicas immutable" {
				if len(errs) != 1 || errs[0].Field != "spec.replicatedJobs" || errs[0].Detail != "field is immutable" {
					t.Errorf("errors = %q", errStrings(errs))
				}
				return
			}
			assertErrors(t, errs, tc.want)
		})
	}
}
