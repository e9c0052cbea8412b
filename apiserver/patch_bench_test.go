package apiserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/storage/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkPatchPodStatus sends the node agent's kind of request — a
// strategic merge patch of a pod's status — through the in-process config
// while an informer watches the pods, as in a running cluster.
func BenchmarkPatchPodStatus(b *testing.B) {
	srv, err := New(Config{Storage: memory.New(100000)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := kubernetes.NewForConfig(srv.InProcessConfig())
	if err != nil {
		b.Fatal(err)
	}
	all := informers.NewSharedInformerFactory(client, 0)
	all.Core().V1().Pods().Informer()
	all.Start(ctx.Done())
	all.WaitForCacheSync(ctx.Done())
	pods := client.CoreV1().Pods("default")
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
