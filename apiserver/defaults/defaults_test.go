package defaults

import (
	"math"
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestImagePullPolicyFor(t *testing.T) {
	cases := map[string]corev1.PullPolicy{
		"perl":                          corev1.PullAlways,
		"perl:latest":                   corev1.PullAlways,
		"perl:5.34.0":                   corev1.PullIfNotPresent,
		"localhost:5000/perl":           corev1.PullAlways,
		"localhost:5000/perl:1":         corev1.PullIfNotPresent,
		"registry.k8s.io/pause:3.10":    corev1.PullIfNotPresent,
		"busybox@sha256:" + sha:         corev1.PullIfNotPresent,
		"busybox:latest@sha256:" + sha:  corev1.PullAlways,
		"":                              corev1.PullIfNotPresent,
		"Perl":                          corev1.PullIfNotPresent,
		"docker.io/library/python:3.11": corev1.PullIfNotPresent,
	}
	for image, want := range cases {
		if got := ImagePullPolicyFor(image); got != want {
			t.Errorf("ImagePullPolicyFor(%q) = %s, want %s", image, got, want)
		}
	}
}

const sha = "0123456789012345678901234567890123456789012345678901234567890123"

func TestJobSpecDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   batchv1.JobSpec
		want func(*batchv1.JobSpec) string
	}{
		{"both unset", batchv1.JobSpec{}, func(s *batchv1.JobSpec) string {
			return check(*s.Completions == 1 && *s.Parallelism == 1 && *s.BackoffLimit == 6 &&
				*s.CompletionMode == batchv1.NonIndexedCompletion && !*s.Suspend && !*s.ManualSelector &&
				*s.PodReplacementPolicy == batchv1.TerminatingOrFailed, "basic defaults")
		}},
		{"work queue", batchv1.JobSpec{Parallelism: ptrTo(int32(3))}, func(s *batchv1.JobSpec) string {
			return check(s.Completions == nil && *s.Parallelism == 3, "completions stay nil")
		}},
		{"completions only", batchv1.JobSpec{Completions: ptrTo(int32(5))}, func(s *batchv1.JobSpec) string {
			return check(*s.Completions == 5 && *s.Parallelism == 1, "parallelism 1")
		}},
		{"backoffLimitPerIndex", batchv1.JobSpec{BackoffLimitPerIndex: ptrTo(int32(1))}, func(s *batchv1.JobSpec) string {
			return check(*s.BackoffLimit == math.MaxInt32, "backoffLimit MaxInt32")
		}},
		{"explicit backoffLimit kept", batchv1.JobSpec{BackoffLimit: ptrTo(int32(0)), BackoffLimitPerIndex: ptrTo(int32(1))}, func(s *batchv1.JobSpec) string {
			return check(*s.BackoffLimit == 0, "backoffLimit 0 kept")
		}},
		{"podFailurePolicy", batchv1.JobSpec{PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
		}}}}, func(s *batchv1.JobSpec) string {
			return check(*s.PodReplacementPolicy == batchv1.Failed &&
				s.PodFailurePolicy.Rules[0].OnPodConditions[0].Status == corev1.ConditionTrue, "Failed + status True")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.in.DeepCopy()
			JobSpec(s)
			if msg := tc.want(s); msg != "" {
				t.Errorf("%s: got %+v", msg, s)
			}
		})
	}
}

func check(ok bool, msg string) string {
	if ok {
		return ""
	}
	return msg
}

func TestPodTemplateDefaults(t *testing.T) {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "pi", Image: "perl:5.34.0",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Env: []corev1.EnvVar{{Name: "NS", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "scratch"},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
		},
	}
	PodSpec(&spec)
	c := spec.Containers[0]
	want := []struct {
		name      string
		got, want any
	}{
		{"dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst},
		{"restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"securityContext", *spec.SecurityContext, corev1.PodSecurityContext{}},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"enableServiceLinks (template: unset)", spec.EnableServiceLinks, (*bool)(nil)},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"emptyDir", spec.Volumes[0].EmptyDir != nil, true},
		{"configMap mode", *spec.Volumes[1].ConfigMap.DefaultMode, int32(420)},
		{"secret mode", *spec.Volumes[2].Secret.DefaultMode, int32(420)},
	}
	for _, w := range want {
		if !reflect.DeepEqual(w.got, w.want) {
			t.Errorf("%s = %#v, want %#v", w.name, w.got, w.want)
		}
	}
}

func TestPodDefaults(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "perl",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	}}}}
	Pod(pod)
	if pod.Spec.EnableServiceLinks == nil || !*pod.Spec.EnableServiceLinks {
		t.Errorf("enableServiceLinks = %v, want true", pod.Spec.EnableServiceLinks)
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "1" {
		t.Errorf("cpu request = %s, want 1 (copied from limit)", got)
	}
	if pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("imagePullPolicy = %s, want Always", pod.Spec.Containers[0].ImagePullPolicy)
	}
	AdmitPod(pod)
	if pod.Spec.ServiceAccountName != "default" || *pod.Spec.Priority != 0 ||
		*pod.Spec.PreemptionPolicy != corev1.PreemptLowerPriority || len(pod.Spec.Tolerations) != 2 {
		t.Errorf("admission defaults wrong: %+v", pod.Spec)
	}
	AdmitPod(pod)
	if len(pod.Spec.Tolerations) != 2 {
		t.Errorf("AdmitPod is not idempotent: %d tolerations", len(pod.Spec.Tolerations))
	}
}

func TestPrepareJobForCreate(t *testing.T) {
	cases := []struct {
		name         string
		job          batchv1.Job
		wantTemplate map[string]string
		wantSelector map[string]string
		wantLabels   map[string]string
	}{
		{
			name: "generated",
			job:  batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}, Status: batchv1.JobStatus{Active: 3}},
			wantTemplate: map[string]string{"job-name": "pi", "batch.kubernetes.io/job-name": "pi",
				"controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1"},
			wantSelector: map[string]string{"batch.kubernetes.io/controller-uid": "u1"},
			wantLabels: map[string]string{"job-name": "pi", "batch.kubernetes.io/job-name": "pi",
				"controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1"},
		},
		{
			name: "user labels kept",
			job: batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1", Labels: map[string]string{"a": "b"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job-name": "x"}}}}},
			wantTemplate: map[string]string{"job-name": "x", "batch.kubernetes.io/job-name": "pi",
				"controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1"},
			wantSelector: map[string]string{"batch.kubernetes.io/controller-uid": "u1"},
			wantLabels:   map[string]string{"a": "b"},
		},
		{
			name: "manual selector",
			job: batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "u2"}, Spec: batchv1.JobSpec{
				ManualSelector: ptrTo(true),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"controller-uid": "old"}},
				Template:       corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"controller-uid": "old"}}},
			}},
			wantTemplate: map[string]string{"controller-uid": "old"},
			wantSelector: map[string]string{"controller-uid": "old"},
			wantLabels:   map[string]string{"controller-uid": "old"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.DeepCopy()
			PrepareJobForCreate(job)
			if !reflect.DeepEqual(job.Spec.Template.Labels, tc.wantTemplate) {
				t.Errorf("template labels = %v, want %v", job.Spec.Template.Labels, tc.wantTemplate)
			}
			if !reflect.DeepEqual(job.Spec.Selector.MatchLabels, tc.wantSelector) {
				t.Errorf("selector = %v, want %v", job.Spec.Selector.MatchLabels, tc.wantSelector)
			}
			if !reflect.DeepEqual(job.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", job.Labels, tc.wantLabels)
			}
			if job.Status.Active != 0 || job.Generation != 1 {
				t.Errorf("status not cleared or generation %d", job.Generation)
			}
		})
	}
}

func TestJobSetDefaults(t *testing.T) {
	js := &jobsetv1alpha2.JobSet{Spec: jobsetv1alpha2.JobSetSpec{
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "leader"}, {Name: "workers",
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{CompletionMode: ptrTo(batchv1.NonIndexedCompletion),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}}}}},
		FailurePolicy: &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{{Name: "named"}, {}}},
	}}
	JobSet(js)
	s := js.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"successPolicy", *s.SuccessPolicy, jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll}},
		{"startupPolicy", s.StartupPolicy.StartupPolicyOrder, jobsetv1alpha2.AnyOrder},
		{"enableDNSHostnames", *s.Network.EnableDNSHostnames, true},
		{"publishNotReadyAddresses", *s.Network.PublishNotReadyAddresses, true},
		{"leader completionMode", *s.ReplicatedJobs[0].Template.Spec.CompletionMode, batchv1.IndexedCompletion},
		{"leader restartPolicy", s.ReplicatedJobs[0].Template.Spec.Template.Spec.RestartPolicy, corev1.RestartPolicyOnFailure},
		{"leader groupName", s.ReplicatedJobs[0].GroupName, "default"},
		{"workers completionMode kept", *s.ReplicatedJobs[1].Template.Spec.CompletionMode, batchv1.NonIndexedCompletion},
		{"workers restartPolicy kept", s.ReplicatedJobs[1].Template.Spec.Template.Spec.RestartPolicy, corev1.RestartPolicyNever},
		{"rule 0 name kept", s.FailurePolicy.Rules[0].Name, "named"},
		{"rule 1 name", s.FailurePolicy.Rules[1].Name, "failurePolicyRule1"},
		{"restartStrategy", s.FailurePolicy.RestartStrategy, jobsetv1alpha2.Recreate},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	child := JobSetChildJobs(js)
	if *child.Spec.ReplicatedJobs[0].Template.Spec.BackoffLimit != 6 || js.Spec.ReplicatedJobs[0].Template.Spec.BackoffLimit != nil {
		t.Errorf("child Job defaults must apply to the copy only")
	}
	raw := map[string]interface{}{"spec": map[string]interface{}{"replicatedJobs": []interface{}{
		map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "b", "replicas": int64(0)}}}}
	JobSetUnstructured(raw)
	rj := raw["spec"].(map[string]interface{})["replicatedJobs"].([]interface{})
	if rj[0].(map[string]interface{})["replicas"] != int64(1) || rj[1].(map[string]interface{})["replicas"] != int64(0) {
		t.Errorf("replicas defaults wrong: %v", rj)
	}
}

func TestServiceAndNamespace(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 8080}}}}
	Service(svc)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone ||
		svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(8080) {
		t.Errorf("service defaults wrong: %+v", svc.Spec)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	Namespace(ns)
	NamespaceForCreate(ns)
	if ns.Labels["kubernetes.io/metadata.name"] != "team-a" || ns.Status.Phase != corev1.NamespaceActive ||
		len(ns.Spec.Finalizers) != 1 {
		t.Errorf("namespace defaults wrong: %+v", ns)
	}
}

func TestEphemeralContainerDefaults(t *testing.T) {
	spec := &corev1.PodSpec{HostNetwork: true, EphemeralContainers: []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		},
	}}}
	PodSpec(spec)
	want := corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	if got := spec.EphemeralContainers[0].EphemeralContainerCommon; !reflect.DeepEqual(got, want) {
		t.Errorf("ephemeral container defaults:\n got %+v\nwant %+v", got, want)
	}
}
