package job

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batchlet/batchlet/apiserver"
	"github.com/batchlet/batchlet/storage/memory"
)

// BenchmarkPerPodCalls creates 500 pods at once through the in-process
// API server, as one sync's creations: on a fresh goroutine per call (the
// controller before callPool) and on the pool. cpu-ms/op is the process's
// CPU per 500 creations.
func BenchmarkPerPodCalls(b *testing.B) {
	const n = 500
	fresh := func(n int, f func(i int) error) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = f(i) })
		}
		wg.Wait()
		return errs
	}
	pool := newCallPool(defaultMaxIdleCallers)
	defer pool.stop()
	for _, tc := range []struct {
		name string
		run  func(n int, f func(i int) error) []error
	}{{"goroutine-per-call", fresh}, {"callPool", pool.run}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := apiserver.New(apiserver.Config{Storage: memory.New(1 << 20)})
			if err != nil {
				b.Fatal(err)
			}
			client, err := kubernetes.NewForConfig(srv.InProcessConfig())
			if err != nil {
				b.Fatal(err)
			}
			pods := client.CoreV1().Pods("default")
			ctx := context.Background()
			cpu0, round := processCPU(b), 0
			for b.Loop() {
				round++
				for _, err := range tc.run(n, func(i int) error {
					_, err := pods.Create(ctx, benchCallPod(fmt.Sprintf("p-%d-%d", round, i)), metav1.CreateOptions{})
					return err
				}) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

func benchCallPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}}},
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
