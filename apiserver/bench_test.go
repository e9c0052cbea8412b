package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/batchlet/batchlet/storage/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkCreatePodsWithInformers creates pods through the in-process
// config while two informers (one filtered, like a node agent) watch.
func BenchmarkCreatePodsWithInformers(b *testing.B) {
	client := benchClient(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2 * b.N)
	count := cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) { wg.Done() }}
	all := informers.NewSharedInformerFactory(client, 0)
	_, _ = all.Core().V1().Pods().Informer().AddEventHandler(count)
	node := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=n1"
	}))
	_, _ = node.Core().V1().Pods().Informer().AddEventHandler(count)
	all.Start(ctx.Done())
	node.Start(ctx.Done())
	all.WaitForCacheSync(ctx.Done())
	node.WaitForCacheSync(ctx.Done())
	b.ResetTimer()
	var cw sync.WaitGroup
	per := (b.N + 7) / 8
	for w := 0; w < 8; w++ {
		cw.Add(1)
		go func(w int) {
			defer cw.Done()
			for i := w * per; i < (w+1)*per && i < b.N; i++ {
				if _, err := client.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("p%d", i), "n1"), metav1.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	cw.Wait()
	wg.Wait()
}

// benchClient is a clientset over a fresh in-memory server, in-process.
func benchClient(b *testing.B) kubernetes.Interface {
	b.Helper()
	srv, err := New(Config{Storage: memory.New(100000)})
	if err != nil {
		b.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(srv.InProcessConfig())
	if err != nil {
		b.Fatal(err)
	}
	return client
}
