package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestValidatePod(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"no namespace", func(p *corev1.Pod) { p.Namespace = "" }, []string{"metadata.namespace: Required value"}},
		{"bad name", func(p *corev1.Pod) { p.Name = "Pi_1" }, []string{
			`metadata.name: Invalid value: "Pi_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"container name, image, duplicate", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Image = ""
			c2 := c
			c2.Name = "Main"
			p.Spec.Containers = append(p.Spec.Containers, c, c2)
		}, []string{
			"spec.containers[1].name: Duplicate value: \"main\"",
			"spec.containers[1].image: Required value",
			`spec.containers[2].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			"spec.containers[2].image: Required value"}},
		{"restart and dns policy", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = "Sometimes"
			p.Spec.DNSPolicy = "Magic"
		}, []string{
			`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
			`spec.dnsPolicy: Unsupported value: "Magic": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{"ports, env, mounts, resources", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Ports = []corev1.ContainerPort{{ContainerPort: 70000, Protocol: "TCP"}, {Protocol: "HTTP", ContainerPort: 80}}
			c.Env = []corev1.EnvVar{{Name: ""}, {Name: "A=B"}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			c.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}, []string{
			"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
			`spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`,
			"spec.containers[0].env[0].name: Required value",
			`spec.containers[0].env[1].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			`spec.containers[0].volumeMounts[0].name: Not found: "data"`,
			`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`}},
		{"volumes", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
			}
		}, []string{
			"spec.volumes[1].emptyDir: Forbidden: may not specify more than 1 volume type",
			`spec.volumes[1].name: Duplicate value: "a"`}},
		{"activeDeadlineSeconds", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(0)) }, []string{
			"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			assertErrors(t, ValidatePod(pod), tc.want)
		})
	}
}

func TestValidatePodUpdate(t *testing.T) {
	cases := []struct {
		name       string
		mutate     func(*corev1.Pod)
		want       []string
		wantPrefix string
	}{
		{"image and labels", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "perl:5.36"
			p.Labels = map[string]string{"a": "b"}
		}, nil, ""},
		{"add toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: "Exists", Effect: "NoSchedule"})
		}, nil, ""},
		{"container added", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "b"
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []string{"spec.containers: Forbidden: pod updates may not add or remove containers"}, ""},
		{"deadline raised", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(20)) }, []string{
			"spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"}, ""},
		{"command changed", func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} }, nil,
			"spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			old.Spec.ActiveDeadlineSeconds = ptr.To(int64(10))
			pod := old.DeepCopy()
			tc.mutate(pod)
			errs := ValidatePodUpdate(pod, old)
			if tc.wantPrefix != "" {
				if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.wantPrefix) || !strings.Contains(errs[0].Error(), `+           "sh"`) {
					t.Errorf("errors = %q", errStrings(errs))
				}
				return
			}
			assertErrors(t, errs, tc.want)
		})
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	run := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name   string
		policy corev1.RestartPolicy
		oldS   corev1.ContainerState
		newS   corev1.ContainerState
		ip     string
		want   []string
	}{
		{"running to terminated", corev1.RestartPolicyNever, run, term, "10.0.0.1", nil},
		{"terminated back to running, Never", corev1.RestartPolicyNever, term, run, "10.0.0.1", []string{
			"status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"}},
		{"terminated back to running, OnFailure after failure", corev1.RestartPolicyOnFailure, term, run, "10.0.0.1", nil},
		{"bad pod IP", corev1.RestartPolicyNever, run, run, "10.0.0", []string{
			`status.podIPs[0].ip: Invalid value: "10.0.0": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			old.Spec.RestartPolicy = tc.policy
			old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: tc.oldS}}
			pod := old.DeepCopy()
			pod.Status.ContainerStatuses[0].State = tc.newS
			pod.Status.PodIPs = []corev1.PodIP{{IP: tc.ip}}
			assertErrors(t, ValidatePodStatusUpdate(pod, old), tc.want)
		})
	}
}

func TestValidateJobStatusUpdate(t *testing.T) {
	now := metav1.Now()
	earlier := metav1.NewTime(now.Add(-10e9))
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue}
	}
	cases := []struct {
		name   string
		old    func(*batchv1.Job)
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"start", nil, func(j *batchv1.Job) { j.Status.StartTime = &now; j.Status.Active = 1 }, nil},
		{"complete properly", func(j *batchv1.Job) { j.Status.StartTime = &earlier }, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
			j.Status.CompletionTime = &now
			j.Status.Succeeded = 1
		}, nil},
		{"complete without completionTime, active", func(j *batchv1.Job) { j.Status.StartTime = &earlier }, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobComplete)}
			j.Status.Active = 1
		}, []string{
			"status.completionTime: Required value: completionTime is required for Complete jobs",
			"status.active: Invalid value: 1: active>0 is invalid for finished job"}},
		{"decrease failed, disable Failed", func(j *batchv1.Job) {
			j.Status.StartTime = &earlier
			j.Status.Failed = 2
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
		}, func(j *batchv1.Job) {
			j.Status.Failed = 1
			j.Status.Conditions = nil
		}, []string{
			"status.conditions: Invalid value: cannot disable the terminal Failed=True condition",
			"status.conditions: Invalid value: cannot disable the terminal FailureTarget=True condition",
			"status.failed: Invalid value: 1: cannot decrease the failed counter"}},
		{"indexes", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To(int32(8))
			j.Spec.BackoffLimitPerIndex = ptr.To(int32(1))
		}, func(j *batchv1.Job) {
			j.Status.CompletedIndexes = "0,3-7"
			j.Status.FailedIndexes = ptr.To("1,3")
		}, []string{`status.failedIndexes: Invalid value: "1,3": failedIndexes and completedIndexes overlap at index: 3`}},
		{"bad completedIndexes on NonIndexed", nil, func(j *batchv1.Job) { j.Status.CompletedIndexes = "1-2-3" }, []string{
			`status.completedIndexes: Invalid value: "1-2-3": error parsing completedIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`,
			`status.completedIndexes: Invalid value: "1-2-3": cannot set non-empty completedIndexes when non-indexed completion mode`}},
		{"startTime moved on a running job", func(j *batchv1.Job) { j.Status.StartTime = &earlier },
			func(j *batchv1.Job) { j.Status.StartTime = &now },
			[]string{"status.startTime: Required value: startTime cannot be removed for unsuspended job"}},
		{"startTime moved while resuming (Suspended True -> False)", func(j *batchv1.Job) {
			j.Status.StartTime = &earlier
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuspended)}
		}, func(j *batchv1.Job) {
			j.Status.StartTime = &now
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}}
		}, nil},
		{"startTime moved after the resume was written", func(j *batchv1.Job) {
			j.Status.StartTime = &earlier
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}}
		}, func(j *batchv1.Job) { j.Status.StartTime = &now },
			[]string{"status.startTime: Required value: startTime cannot be removed for unsuspended job"}},
		{"uncounted", nil, func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}, Failed: []types.UID{"a"}}
		}, []string{
			`status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty`,
			`status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validJob()
			if tc.old != nil {
				tc.old(old)
			}
			job := old.DeepCopy()
			tc.mutate(job)
			assertErrors(t, ValidateJobStatusUpdate(job, old), tc.want)
		})
	}
}
