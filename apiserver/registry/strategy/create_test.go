package strategy

import (
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// Resources flagged ValidateChecksMeta fail Validate whenever the create's
// metadata checks fail, so skipping those checks loses nothing: a failing
// create reports Validate's errors, each once, with the message the two
// lists together make.
func TestValidateChecksMetaCoversMetadataErrors(t *testing.T) {
	res := registry.Pods()
	if !res.ValidateChecksMeta {
		t.Fatal("pods should be flagged")
	}
	st := For(res, clocktesting.NewFakePassiveClock(epoch))
	for name, mutate := range map[string]func(*corev1.Pod){
		"bad name":         func(p *corev1.Pod) { p.Name = "Bad_Name" },
		"no namespace":     func(p *corev1.Pod) { p.Namespace = "" },
		"bad label key":    func(p *corev1.Pod) { p.Labels = map[string]string{"a/b/c": "x"} },
		"bad label value":  func(p *corev1.Pod) { p.Labels = map[string]string{"a": "-x-"} },
		"bad annotation":   func(p *corev1.Pod) { p.Annotations = map[string]string{"Bad Key": "v"} },
		"bad finalizer":    func(p *corev1.Pod) { p.Finalizers = []string{"not a finalizer"} },
		"bad owner":        func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j"}} },
		"negative gen":     func(p *corev1.Pod) { p.Generation = -1 },
		"generateName bad": func(p *corev1.Pod) { p.GenerateName = "Bad_" },
	} {
		pod := testPod("p")
		pod.UID = "u"
		st.PrepareForCreate(pod)
		mutate(pod)
		meta := metaErrors(res, pod)
		if len(meta) == 0 {
			t.Fatalf("%s: no metadata error to test", name)
		}
		if len(res.Validate(pod)) == 0 {
			t.Errorf("%s: Validate passes a pod the metadata checks reject: %v", name, meta)
		}
		got := st.Validate(pod)
		both := append(meta, res.Validate(pod)...)
		if got.ToAggregate().Error() != both.ToAggregate().Error() || len(got) != len(res.Validate(pod)) {
			t.Errorf("%s: create errors\n got %v\nwant %v", name, got, res.Validate(pod))
		}
	}
	valid := testPod("p")
	st.PrepareForCreate(valid)
	if errs := st.Validate(valid); len(errs) != 0 {
		t.Fatalf("valid pod rejected: %v", errs)
	}
}

// InitMeta drops the server-owned metadata a client sent and sets its
// own; generation starts at 1 only for resources with a spec.
func TestInitMeta(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(epoch)
	for _, tc := range []struct {
		name          string
		res           *registry.Resource
		obj           metav1.Object
		wantGenerated bool
		wantGen       int64
	}{
		{"pod with a name", registry.Pods(), &testPod("p").ObjectMeta, false, 1},
		{"pod from generateName", registry.Pods(), &metav1.ObjectMeta{GenerateName: "p-"}, true, 1},
		{"configmap has no generation", registry.ConfigMaps(), &metav1.ObjectMeta{Name: "c", Generation: 7}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.res.New()
			m := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
			m.SetName(tc.obj.GetName())
			m.SetGenerateName(tc.obj.GetGenerateName())
			m.SetGeneration(tc.obj.GetGeneration())
			m.SetResourceVersion("12")
			m.SetUID("client-uid")
			ts := metav1.NewTime(epoch.Add(-time.Hour))
			m.SetDeletionTimestamp(&ts)
			generated := For(tc.res, clk).InitMeta(obj)
			if generated != tc.wantGenerated {
				t.Errorf("generated = %v, want %v", generated, tc.wantGenerated)
			}
			if tc.wantGenerated && (len(m.GetName()) != len(tc.obj.GetGenerateName())+5 || m.GetName()[:2] != "p-") {
				t.Errorf("name %q not generated from %q", m.GetName(), tc.obj.GetGenerateName())
			}
			if m.GetUID() == "client-uid" || m.GetUID() == "" {
				t.Errorf("uid %q kept from the client", m.GetUID())
			}
			if !m.GetCreationTimestamp().Time.Equal(epoch) || m.GetResourceVersion() != "" || m.GetDeletionTimestamp() != nil {
				t.Errorf("metadata created %v rv %q deletion %v", m.GetCreationTimestamp(), m.GetResourceVersion(), m.GetDeletionTimestamp())
			}
			if m.GetGeneration() != tc.wantGen {
				t.Errorf("generation %d, want %d", m.GetGeneration(), tc.wantGen)
			}
		})
	}
}
