package strategy

import (
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/apiserver/defaults"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/validation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
)

// storedPodSpecs are pod specs of many shapes, as a create stores them
// after defaulting (storablePods checks that they validate).
func storedPodSpecs() map[string]corev1.PodSpec {
	ctr := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "busybox:1.36"} }
	specs := map[string]corev1.PodSpec{
		"minimal": {Containers: []corev1.Container{ctr("c")}},
		"job pod": {Containers: []corev1.Container{ctr("c")}, RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, ServiceAccountName: "worker",
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}},
		"init and ports": {InitContainers: []corev1.Container{ctr("init")}, Containers: []corev1.Container{{
			Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Env:            []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}},
		}}},
		"volumes": {Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/tmp/s"}, {Name: "cfg", MountPath: "/cfg"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}},
		"resources": {Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		"deadline and gates": {Containers: []corev1.Container{ctr("c")}, ActiveDeadlineSeconds: ptr(int64(30)),
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}}},
		"hostname and grace": {Containers: []corev1.Container{ctr("a"), ctr("b")}, Hostname: "worker-0", Subdomain: "workers",
			TerminationGracePeriodSeconds: ptr(int64(0)), HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet},
		"bound": {Containers: []corev1.Container{ctr("c")}, NodeName: "node-1"},
	}
	return specs
}

func ptr[T any](v T) *T { return &v }

// storablePods are the stored pods of the equivalence test: created (so
// defaulted, admitted and valid) and, for those named "binding ...",
// bound afterwards to a node name binding does not check.
func storablePods(t *testing.T, st Strategy) map[string]*corev1.Pod {
	pods := map[string]*corev1.Pod{}
	for name, spec := range storedPodSpecs() {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"},
			Finalizers: []string{"example.com/keep", "batch.kubernetes.io/job-tracking"}}, Spec: spec}
		st.PrepareForCreate(p)
		if errs := validation.ValidatePod(p); len(errs) > 0 {
			t.Fatalf("stored pod %q does not validate: %v", name, errs)
		}
		p.UID, p.ResourceVersion, p.Generation = "uid-1", "7", 1
		pods[name] = p
		for _, node := range []string{"Bad_Node", "node.example.com", "-x-"} {
			bound := p.DeepCopy()
			bound.Spec.NodeName = node // binding sets it unchecked
			pods[fmt.Sprintf("binding %s to %s", name, node)] = bound
		}
	}
	return pods
}

// metadataEdits are what a metadata patch may do to the shared current
// pod (each writes only the metadata it changes, never the spec).
var metadataEdits = map[string]func(p *corev1.Pod){
	"remove finalizer":  func(p *corev1.Pod) { p.Finalizers = []string{"example.com/keep"} },
	"add label":         func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x", "b": "c"} },
	"invalid label":     func(p *corev1.Pod) { p.Labels = map[string]string{"-bad-": "v"} },
	"invalid finalizer": func(p *corev1.Pod) { p.Finalizers = []string{"not a finalizer"} },
	"annotation":        func(p *corev1.Pod) { p.Annotations = map[string]string{"example.com/a": "b"} },
	"other uid":         func(p *corev1.Pod) { p.UID = "client" },
	"owner reference": func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u1"}}
	},
	"owner reference no uid": func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j"}}
	},
	"generateName": func(p *corev1.Pod) { p.GenerateName = "p-" },
	"nothing":      func(p *corev1.Pod) {},
}

// An update whose spec is the stored pod's own memory (a metadata patch of
// the shared current pod) is neither defaulted again nor validated in full,
// and answers as the full path, which a private copy of the same spec
// takes: the same errors, the same prepared object, over pods of many
// shapes (including nodes binding stored unchecked) and metadata edits
// valid and invalid.
func TestStoredSpecUpdateMatchesFullPath(t *testing.T) {
	st := For(registry.Pods(), clocktesting.NewFakePassiveClock(epoch))
	n := 0
	for podName, stored := range storablePods(t, st) {
		for editName, edit := range metadataEdits {
			t.Run(podName+"/"+editName, func(t *testing.T) {
				before := stored.DeepCopy()
				shared := *stored // the patch result shares the stored pod's parts
				shared.ResourceVersion = ""
				edit(&shared)
				full := shared.DeepCopy() // a spec of its own: the full path

				fastErrs, fastChanged := prepareAndValidate(st, &shared, stored)
				fullErrs, fullChanged := prepareAndValidate(st, full, stored)

				if got, want := fmt.Sprint(fastErrs), fmt.Sprint(fullErrs); got != want {
					t.Errorf("errors differ:\nstored-spec path %s\nfull path        %s", got, want)
				}
				if fastChanged || fullChanged {
					t.Errorf("spec changed: stored-spec path %v, full path %v", fastChanged, fullChanged)
				}
				if !equality.Semantic.DeepEqual(&shared, full) {
					t.Errorf("prepared objects differ:\nstored-spec path %+v\nfull path        %+v", shared, *full)
				}
				if !equality.Semantic.DeepEqual(stored, before) {
					t.Error("the stored pod was written to")
				}
			})
			n++
		}
	}
	if n < 200 {
		t.Fatalf("only %d cases", n)
	}
}

func prepareAndValidate(st Strategy, obj, old *corev1.Pod) (field.ErrorList, bool) {
	changed := st.PrepareForUpdate(obj, old, Main)
	return st.ValidateUpdate(obj, old, Main, changed), changed
}

// A pod stored before a default existed (by an older version) lacks it:
// a metadata patch keeps its spec as stored and succeeds, where
// re-defaulting it made the update a forbidden spec change (kube-apiserver
// defaults the stored object on read, so no spec changes there either).
func TestStoredSpecMissingADefault(t *testing.T) {
	st := For(registry.Pods(), clocktesting.NewFakePassiveClock(epoch))
	stored := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "3",
		Finalizers: []string{"batch.kubernetes.io/job-tracking"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	defaults.Pod(stored)
	stored.Spec.SchedulerName = ""
	obj := *stored
	obj.Finalizers = nil
	errs, changed := prepareAndValidate(st, &obj, stored)
	if len(errs) > 0 || changed {
		t.Fatalf("errors %v, spec changed %v", errs, changed)
	}
	if obj.Spec.SchedulerName != "" || obj.Generation != stored.Generation {
		t.Errorf("spec defaulted again: schedulerName %q generation %d", obj.Spec.SchedulerName, obj.Generation)
	}
}
