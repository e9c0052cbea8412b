package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
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
	return benchClientOf(b, "http")
}

// watchedPods is the default namespace's pod client of a fresh server,
// with an informer watching all pods (as in a running cluster) until ctx
// ends.
func watchedPods(ctx context.Context, b *testing.B) corev1client.PodInterface {
	b.Helper()
	client := benchClient(b)
	all := informers.NewSharedInformerFactory(client, 0)
	all.Core().V1().Pods().Informer()
	all.Start(ctx.Done())
	all.WaitForCacheSync(ctx.Done())
	return client.CoreV1().Pods("default")
}
