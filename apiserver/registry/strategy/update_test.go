package strategy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

// An update keeps the server-owned metadata, bumps the generation only on
// a spec change of the main resource, and validates with the spec
// comparison PrepareForUpdate made.
func TestPrepareAndValidateUpdate(t *testing.T) {
	st := For(registry.Pods(), clocktesting.NewFakePassiveClock(epoch))
	old := testPod("p")
	old.UID, old.Generation, old.ResourceVersion = "uid-1", 1, "5"
	st.PrepareForCreate(old) // the stored pod is defaulted
	for _, tc := range []struct {
		name        string
		mode        Mode
		edit        func(p *corev1.Pod)
		wantChanged bool
		wantGen     int64
		wantErr     string
	}{
		{"labels only", Main, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false, 1, ""},
		{"image change", Main, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, true, 2, ""},
		{"forbidden spec change", Main, func(p *corev1.Pod) { p.Spec.Hostname = "h" }, true, 2, "pod updates may not change fields other than"},
		{"status write keeps spec", Status, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, false, 1, ""},
		{"raw write checks metadata", Raw, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "-x-"} }, false, 1, "metadata.labels"},
		// Only a missing UID is filled in; another one is immutable, as
		// kube-apiserver's BeforeUpdate (a patch's UID reaches this).
		{"another uid", Main, func(p *corev1.Pod) { p.UID = "client" }, false, 1, `metadata.uid: Invalid value: "client": field is immutable`},
		{"another uid in status", Status, func(p *corev1.Pod) { p.UID = "client" }, false, 1, `metadata.uid: Invalid value: "client": field is immutable`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := old.DeepCopy()
			obj.UID, obj.ResourceVersion, obj.Generation = "", "1", 9
			tc.edit(obj)
			wantUID := old.UID
			if obj.UID != "" {
				wantUID = obj.UID
			}
			changed := st.PrepareForUpdate(obj, old, tc.mode)
			if changed != tc.wantChanged || obj.Generation != tc.wantGen {
				t.Errorf("specChanged %v generation %d, want %v %d", changed, obj.Generation, tc.wantChanged, tc.wantGen)
			}
			if obj.UID != wantUID || obj.ResourceVersion != old.ResourceVersion {
				t.Errorf("uid %q rv %q not kept from the stored object", obj.UID, obj.ResourceVersion)
			}
			errs := st.ValidateUpdate(obj, old, tc.mode, changed)
			if got := errs.ToAggregate(); (got == nil) != (tc.wantErr == "") || (got != nil && !strings.Contains(got.Error(), tc.wantErr)) {
				t.Errorf("errors %v, want %q", got, tc.wantErr)
			}
		})
	}
}

// specsDiffer answers as the semantic comparison of the specs does,
// whether the new spec shares the old one's memory (a metadata patch of
// the shared current object), is a deep copy of it, or differs.
func TestSpecsDiffer(t *testing.T) {
	old := testPod("p")
	old.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	for _, tc := range []struct {
		name string
		new  func() *corev1.Pod
		want bool
	}{
		{"shared spec", func() *corev1.Pod { p := *old; p.Labels = nil; return &p }, false},
		{"deep copy", func() *corev1.Pod { return old.DeepCopy() }, false},
		{"empty instead of nil", func() *corev1.Pod {
			p := old.DeepCopy()
			p.Spec.Volumes = []corev1.Volume{}
			return p
		}, false},
		{"same quantity spelled otherwise", func() *corev1.Pod {
			p := old.DeepCopy()
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1000m")
			return p
		}, false},
		{"shared containers, other node", func() *corev1.Pod { p := *old; p.Spec.NodeName = "n"; return &p }, true},
		{"image changed", func() *corev1.Pod {
			p := old.DeepCopy()
			p.Spec.Containers[0].Image = "other"
			return p
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := specsDiffer(tc.new(), old); got != tc.want {
				t.Errorf("specsDiffer = %v, want %v", got, tc.want)
			}
		})
	}
	if specsDiffer(&corev1.ConfigMap{}, &corev1.ConfigMap{Data: map[string]string{"a": "b"}}) {
		t.Error("objects without a spec never change it")
	}
}

// BenchmarkSpecsDiffer compares the spec of a pod with the one a
// metadata-only patch leaves (shared) and with a deep copy.
func BenchmarkSpecsDiffer(b *testing.B) {
	old := testPod("p")
	st := For(registry.Pods(), clocktesting.NewFakePassiveClock(epoch))
	st.PrepareForCreate(old)
	shared := *old
	for name, obj := range map[string]*corev1.Pod{"shared": &shared, "copy": old.DeepCopy()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if specsDiffer(obj, old) {
					b.Fatal("differ")
				}
			}
		})
	}
}

// An immutable-metadata error of an update is listed once, as
// kube-apiserver lists it: the resource's own update validation makes the
// object-meta update checks, the strategy does not make them again. (An
// invalid label is listed twice on a pod or Job update, by upstream too:
// its update validation checks the new metadata and the update.)
func TestUpdateListsMetadataErrorsOnce(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(epoch)
	pod := testPod("p")
	For(registry.Pods(), clk).PrepareForCreate(pod)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	For(registry.Jobs(), clk).PrepareForCreate(job)
	for _, tc := range []struct {
		name string
		res  *registry.Resource
		old  runtime.Object
	}{{"pod", registry.Pods(), pod}, {"job", registry.Jobs(), job}} {
		for _, mode := range []Mode{Main, Status} {
			t.Run(fmt.Sprintf("%s/mode %d", tc.name, mode), func(t *testing.T) {
				old := tc.old.DeepCopyObject()
				genericstore.Accessor(old).SetUID("uid-1")
				obj := old.DeepCopyObject()
				genericstore.Accessor(obj).SetUID("client")
				st := For(tc.res, clk)
				errs := st.ValidateUpdate(obj, old, mode, st.PrepareForUpdate(obj, old, mode))
				seen := map[string]bool{}
				for _, e := range errs {
					if seen[e.Error()] {
						t.Errorf("%q listed twice in %v", e.Error(), errs)
					}
					seen[e.Error()] = true
				}
				if !seen[`metadata.uid: Invalid value: "client": field is immutable`] {
					t.Errorf("errors %v lack the immutable uid", errs)
				}
			})
		}
	}
}
