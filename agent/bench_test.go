package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/process"
	"github.com/batchlet/batchlet/runtime/sim"
)

// BenchmarkBoundToRunning reports how long a bound pod takes to be
// written Running by the agent with the process runtime.
func BenchmarkBoundToRunning(b *testing.B) { benchBoundToRunning(b, false) }

// BenchmarkBoundToRunningNoNamespaces is the same without pod namespaces.
func BenchmarkBoundToRunningNoNamespaces(b *testing.B) { benchBoundToRunning(b, true) }

// BenchmarkBoundToRunningSim measures the agent alone, with the sim
// runtime (pods run for an hour).
func BenchmarkBoundToRunningSim(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchAgent(b, sim.New(ctx, nil))
}

func benchBoundToRunning(b *testing.B, noNS bool) {
	rt, err := process.New(process.Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), DisableNamespaces: noNS})
	if err != nil {
		b.Fatal(err)
	}
	benchAgent(b, rt)
}

func benchAgent(b *testing.B, rt runtime.Runtime) {
	// The simple fake is much cheaper per call than NewClientset's.
	client := fake.NewSimpleClientset() //nolint:staticcheck
	a, err := New(Config{Client: client, NodeName: "node-1", Runtime: rt, Port: -1, MaxPods: 100000,
		Logger: slog.New(slog.DiscardHandler), ShutdownGracePeriod: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for !a.podsInf.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("b%d", i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Annotations: map[string]string{sim.DurationAnnotation: "1h"}},
			Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "x", Command: []string{"sleep", "30"}}}}}
		start := time.Now()
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Modified && p.Name == name && p.Status.Phase == corev1.PodRunning {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}
