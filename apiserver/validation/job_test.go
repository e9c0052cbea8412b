package validation

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestValidateJob(t *testing.T) {
	pfp := func(rules ...batchv1.PodFailurePolicyRule) *batchv1.PodFailurePolicy {
		return &batchv1.PodFailurePolicy{Rules: rules}
	}
	onExit := func(op batchv1.PodFailurePolicyOnExitCodesOperator, v ...int32) *batchv1.PodFailurePolicyOnExitCodesRequirement {
		return &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: v}
	}
	indexed := func(j *batchv1.Job, completions int32) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To(completions)
	}
	cases := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"valid", func(*batchv1.Job) {}, nil},
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"restartPolicy bogus", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "Sometimes" }, []string{
			`spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
			`spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"`}},
		{"negative counts", func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To(int32(-1))
			j.Spec.Completions = ptr.To(int32(-2))
			j.Spec.BackoffLimit = ptr.To(int32(-3))
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(-4))
			j.Spec.TTLSecondsAfterFinished = ptr.To(int32(-5))
		}, []string{
			"spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
			"spec.completions: Invalid value: -2: must be greater than or equal to 0",
			"spec.activeDeadlineSeconds: Invalid value: -4: must be greater than or equal to 0",
			"spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
			"spec.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0"}},
		{"selector does not match", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr.To(true)
			j.Spec.Selector.MatchLabels = map[string]string{"app": "x"}
		}, []string{"spec.template.metadata.labels: Invalid value: " +
			`{"batch.kubernetes.io/controller-uid":"uid-1","batch.kubernetes.io/job-name":"pi","controller-uid":"uid-1","job-name":"pi"}` +
			": `selector` does not match template `labels`"}},
		{"wrong generated label", func(j *batchv1.Job) { j.Spec.Template.Labels["job-name"] = "other" }, []string{
			`spec.template.metadata.labels[job-name]: Invalid value: "other": must be 'pi'`}},
		{"completionMode bogus", func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.CompletionMode("Foo")) }, []string{
			`spec.completionMode: Unsupported value: "Foo": supported values: "NonIndexed", "Indexed"`}},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = nil
		}, []string{"spec.completions: Required value: when completion mode is Indexed"}},
		{"indexed name too long", func(j *batchv1.Job) {
			j.Name = "a23456789012345678901234567890123456789012345678901234567890"
			for _, k := range []string{"job-name", "batch.kubernetes.io/job-name"} {
				j.Spec.Template.Labels[k] = j.Name
			}
			indexed(j, 1000)
		}, []string{`metadata.name: Invalid value: "a23456789012345678901234567890123456789012345678901234567890": will not able to create pod with invalid DNS label: a23456789012345678901234567890123456789012345678901234567890-999`}},
		{"backoffLimitPerIndex on NonIndexed", func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To(int32(1))
			j.Spec.MaxFailedIndexes = ptr.To(int32(1))
		}, []string{
			"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
			"spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode"}},
		{"maxFailedIndexes without backoffLimitPerIndex and above completions", func(j *batchv1.Job) {
			indexed(j, 2)
			j.Spec.MaxFailedIndexes = ptr.To(int32(3))
		}, []string{
			"spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
			"spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions"}},
		{"podFailurePolicy with OnFailure", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = pfp(batchv1.PodFailurePolicyRule{Action: "FailJob", OnExitCodes: onExit("In", 42)})
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		}, []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
		{"podFailurePolicy with TerminatingOrFailed", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = pfp(batchv1.PodFailurePolicyRule{Action: "FailJob", OnExitCodes: onExit("In", 42)})
		}, []string{`spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"`}},
		{"podFailurePolicy rule errors", func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = pfp(
				batchv1.PodFailurePolicyRule{},
				batchv1.PodFailurePolicyRule{Action: "Explode", OnExitCodes: onExit("In", 3, 0, 3)},
				batchv1.PodFailurePolicyRule{Action: "FailIndex", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("nope")},
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: "Maybe"}}},
			)
		}, []string{
			`spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`,
			"spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
			`spec.podFailurePolicy.rules[1].action: Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", "Ignore"`,
			"spec.podFailurePolicy.rules[1].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
			"spec.podFailurePolicy.rules[1].onExitCodes.values[2]: Duplicate value: 3",
			"spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: [3,0,3]: must be ordered",
			`spec.podFailurePolicy.rules[2].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`,
			`spec.podFailurePolicy.rules[2].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]`,
			`spec.podFailurePolicy.rules[2].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template`,
			"spec.podFailurePolicy.rules[2].onExitCodes.values: Invalid value: null: at least one value is required",
			`spec.podFailurePolicy.rules[2].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
			"spec.podFailurePolicy.rules[2]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"}},
		{"successPolicy on NonIndexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To(int32(1))}}}
		}, []string{`spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode`}},
		{"successPolicy rules", func(j *batchv1.Job) {
			indexed(j, 5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{}, {SucceededIndexes: ptr.To("3-3")}, {SucceededIndexes: ptr.To("1,7")},
				{SucceededIndexes: ptr.To("0-1"), SucceededCount: ptr.To(int32(6))},
			}}
		}, []string{
			"spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
			`spec.successPolicy.rules[1].succeededIndexes: Invalid value: "3-3": error parsing succeededIndexes: non-increasing order, previous: 3, current: 3`,
			`spec.successPolicy.rules[2].succeededIndexes: Invalid value: "1,7": error parsing succeededIndexes: too large index: "7"`,
			"spec.successPolicy.rules[3].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
			"spec.successPolicy.rules[3].succeededCount: Invalid value: 6: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"}},
		{"managedBy", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("no-domain") }, []string{
			`spec.managedBy: Invalid value: "no-domain": must be a domain-prefixed path (such as "acme.io/foo")`}},
		{"no containers", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers = nil }, []string{
			"spec.template.spec.containers: Required value"}},
		{"no name", func(j *batchv1.Job) { j.Name = "" }, []string{
			"metadata.name: Required value: name or generateName is required",
			`spec.template.metadata.labels[job-name]: Invalid value: "pi": must be ''`,
			`spec.template.metadata.labels[batch.kubernetes.io/job-name]: Invalid value: "pi": must be ''`}},
		{"selector not generated", func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels = map[string]string{"batch.kubernetes.io/controller-uid": "uid-2"}
			j.Spec.Template.Labels["batch.kubernetes.io/controller-uid"] = "uid-2"
		}, []string{
			`spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Invalid value: "uid-2": must be 'uid-1'`,
			"spec.selector: Invalid value: " + `{"matchLabels":{"batch.kubernetes.io/controller-uid":"uid-2"}}` + ": `selector` not auto-generated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := validJob()
			tc.mutate(job)
			assertErrors(t, ValidateJob(job), tc.want)
		})
	}
}

func TestValidateJobUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    func(*batchv1.Job)
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"parallelism and suspend mutable", nil, func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To(int32(5))
			j.Spec.Suspend = ptr.To(true)
			j.Spec.BackoffLimit = ptr.To(int32(1))
		}, nil},
		{"completions immutable", nil, func(j *batchv1.Job) { j.Spec.Completions = ptr.To(int32(3)) }, []string{
			"spec.completions: Invalid value: 3: field is immutable"}},
		{"elastic indexed", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}, func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To(int32(3))
			j.Spec.Parallelism = ptr.To(int32(3))
		}, nil},
		{"elastic indexed out of tandem", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}, func(j *batchv1.Job) { j.Spec.Completions = ptr.To(int32(3)) }, []string{
			"spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism"}},
		{"completionMode immutable", nil, func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}, []string{`spec.completionMode: Invalid value: "Indexed": field is immutable`}},
		{"nodeSelector on suspended never-started job", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) },
			func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validJob()
			if tc.old != nil {
				tc.old(old)
			}
			job := old.DeepCopy()
			tc.mutate(job)
			assertErrors(t, ValidateJobUpdate(job, old), tc.want)
		})
	}
	t.Run("template immutable once started", func(t *testing.T) {
		old := validJob()
		job := old.DeepCopy()
		job.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		errs := ValidateJobUpdate(job, old)
		if len(errs) != 1 || errs[0].Field != "spec.template" || errs[0].Detail != "field is immutable" {
			t.Errorf("errors = %v", errs)
		}
	})
}
