package registry

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/defaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod update that changes the spec is defaulted as before (the defaults
// of the whole spec), without writing into the stored pod it may share
// memory with; a spec the update left as it was stays shared and is not
// defaulted again, even when stored before a default existed (defaulting it
// made the update a forbidden spec change).
func TestPodPrepareForUpdateCopiesOnWrite(t *testing.T) {
	defaulted := func() *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		defaults.Pod(p)
		return p
	}
	undefaulted := func() *corev1.Pod { // stored before a default existed
		p := defaulted()
		p.Spec.SchedulerName = ""
		p.Spec.Containers[0].TerminationMessagePath = ""
		return p
	}
	for _, tc := range []struct {
		name       string
		old        *corev1.Pod
		edit       func(shallow *corev1.Pod)
		wantShared bool // the spec stays the stored one, as stored
	}{
		{"metadata patch of a defaulted pod", defaulted(), func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
		{"metadata patch of a pod missing defaults", undefaulted(), func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
		{"spec patch sharing the containers", undefaulted(), func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.old.DeepCopy()
			obj := *tc.old // the patch result shares the stored pod's parts
			tc.edit(&obj)
			want := obj.DeepCopy() // the old path: defaults on a private copy
			want.Status = before.Status
			if !tc.wantShared {
				defaults.PodSpec(&want.Spec)
			}

			Pods().PrepareForUpdate(&obj, tc.old)

			if !equality.Semantic.DeepEqual(tc.old, before) {
				t.Fatal("the stored pod was written to")
			}
			if !equality.Semantic.DeepEqual(&obj, want) {
				t.Errorf("prepared pod differs from the expected copy:\n got %+v\nwant %+v", obj.Spec, want.Spec)
			}
			if got := sameSpecMemory(&obj.Spec, &tc.old.Spec); got != tc.wantShared {
				t.Errorf("spec shared = %v, want %v", got, tc.wantShared)
			}
		})
	}
}
