package strategy

import (
	"slices"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

func boundPod() *corev1.Pod {
	pod := testPod("p")
	pod.Spec.NodeName = "n1"
	return pod
}

// A delete marks the object with its propagation finalizers and a
// deletion time (now, or after the grace period), or lets it go now.
func TestPrepareForDelete(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(epoch)
	orphan, foreground, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	zero, thirty := int64(0), int64(30)
	configMap := func(finalizers ...string) runtime.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Finalizers: finalizers}}
	}
	for _, tc := range []struct {
		name           string
		res            *registry.Resource
		obj            runtime.Object
		opts           metav1.DeleteOptions
		wantPending    bool
		wantFinalizers []string
		wantDeletion   time.Time // zero: none
		wantGrace      *int64
	}{
		{"no finalizers goes now", registry.ConfigMaps(), configMap(), metav1.DeleteOptions{}, false, nil, time.Time{}, nil},
		{"finalizer keeps it, marked now", registry.ConfigMaps(), configMap("x/y"), metav1.DeleteOptions{}, true, []string{"x/y"}, epoch, &zero},
		{"orphan adds its finalizer", registry.ConfigMaps(), configMap(), metav1.DeleteOptions{PropagationPolicy: &orphan}, true,
			[]string{metav1.FinalizerOrphanDependents}, epoch, &zero},
		{"foreground replaces orphan", registry.ConfigMaps(), configMap(metav1.FinalizerOrphanDependents), metav1.DeleteOptions{PropagationPolicy: &foreground}, true,
			[]string{metav1.FinalizerDeleteDependents}, epoch, &zero},
		{"background drops both", registry.ConfigMaps(), configMap(metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents), metav1.DeleteOptions{PropagationPolicy: &background}, false,
			[]string{}, time.Time{}, nil},
		{"bound pod is graceful", registry.Pods(), boundPod(), metav1.DeleteOptions{GracePeriodSeconds: &thirty}, true, nil, epoch.Add(30 * time.Second), &thirty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			pending := For(tc.res, clk).PrepareForDelete(tc.obj, &opts)
			m := tc.obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
			if pending != tc.wantPending {
				t.Errorf("pending = %v, want %v", pending, tc.wantPending)
			}
			if !slices.Equal(m.GetFinalizers(), tc.wantFinalizers) {
				t.Errorf("finalizers %v, want %v", m.GetFinalizers(), tc.wantFinalizers)
			}
			switch ts := m.GetDeletionTimestamp(); {
			case tc.wantDeletion.IsZero() && ts != nil:
				t.Errorf("deletionTimestamp %v, want none", ts)
			case !tc.wantDeletion.IsZero() && (ts == nil || !ts.Time.Equal(tc.wantDeletion)):
				t.Errorf("deletionTimestamp %v, want %v", ts, tc.wantDeletion)
			}
			if g := m.GetDeletionGracePeriodSeconds(); (g == nil) != (tc.wantGrace == nil) || (g != nil && *g != *tc.wantGrace) {
				t.Errorf("deletionGracePeriodSeconds %v, want %v", g, tc.wantGrace)
			}
		})
	}
}
