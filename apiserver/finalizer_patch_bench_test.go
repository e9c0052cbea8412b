package apiserver

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// finalizerPatch is one way to take the Job tracking finalizer off a pod
// that holds finalizers [keep, tracking].
type finalizerPatch struct {
	name  string
	typ   types.PatchType
	build func(p *corev1.Pod) []byte
}

// finalizerPatches are the candidates for the Job controller's release
// step: upstream's strategic merge directive (what the controller sends),
// a JSON patch testing the finalizer at its index before removing it, and
// a merge patch of the remaining list with the pod's resourceVersion as
// precondition.
var finalizerPatches = []finalizerPatch{
	{"strategic-deleteFromPrimitiveList", types.StrategicMergePatchType, func(*corev1.Pod) []byte {
		return []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batchv1.JobTrackingFinalizer + `"]}}`)
	}},
	{"json-test-remove", types.JSONPatchType, func(*corev1.Pod) []byte {
		return []byte(`[{"op":"test","path":"/metadata/finalizers/1","value":"` + batchv1.JobTrackingFinalizer + `"},{"op":"remove","path":"/metadata/finalizers/1"}]`)
	}},
	{"merge-with-resourceVersion", types.MergePatchType, func(p *corev1.Pod) []byte {
		return []byte(`{"metadata":{"finalizers":["example.com/keep"],"resourceVersion":"` + p.ResourceVersion + `"}}`)
	}},
}

// BenchmarkRemoveTrackingFinalizer sends each candidate patch through the
// in-process config, with an informer watching the pods as the Job
// controller's does, to compare what each costs per pod (client encode and
// decode included, as the controller pays them too).
func BenchmarkRemoveTrackingFinalizer(b *testing.B) {
	for _, fp := range finalizerPatches {
		b.Run(fp.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pods := watchedPods(ctx, b)
			created := make([]*corev1.Pod, b.N)
			for i := range b.N {
				p := testPod(fmt.Sprintf("p%d", i), "n1")
				p.Finalizers = []string{"example.com/keep", batchv1.JobTrackingFinalizer}
				c, err := pods.Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				created[i] = c
			}
			b.ReportAllocs()
			b.ResetTimer()
			done := reportCPU(b)
			for _, p := range created {
				got, err := pods.Patch(ctx, p.Name, fp.typ, fp.build(p), metav1.PatchOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(got.Finalizers) != 1 || got.Finalizers[0] != "example.com/keep" {
					b.Fatalf("finalizers after %s: %v", fp.name, got.Finalizers)
				}
			}
			done()
		})
	}
}
