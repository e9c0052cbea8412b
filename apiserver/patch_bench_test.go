package apiserver

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPatchPodStatus sends the node agent's kind of request — a
// strategic merge patch of a pod's status — through the in-process config
// while an informer watches the pods, as in a running cluster.
func BenchmarkPatchPodStatus(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := watchedPods(ctx, b)
	if _, err := pods.Create(ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		patch := fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null,"message":"m%d"}]}}`, i)
		if _, err := pods.Patch(context.Background(), "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMetadataPatch sends the Job controller's kind of request — a
// strategic merge patch of a pod's finalizers — through the in-process
// config while an informer watches the pods: every other patch adds the
// finalizer back, so each one writes.
func BenchmarkMetadataPatch(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := watchedPods(ctx, b)
	if _, err := pods.Create(ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	patches := [][]byte{
		[]byte(`{"metadata":{"finalizers":["batch.kubernetes.io/job-tracking"]}}`),
		[]byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`),
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pods.Patch(context.Background(), "p", types.StrategicMergePatchType, patches[i%2], metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
