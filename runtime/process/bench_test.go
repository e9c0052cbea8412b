package process

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPodsOfTrue runs pods of one `true` container, 100 at a time, as
// the process bench's Job does, and reports the runtime's own CPU per pod
// (the pods' processes apart). The pod directories are under $TMPDIR.
func BenchmarkPodsOfTrue(b *testing.B) {
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan types.UID, 128)
	r.Subscribe(func(uid types.UID) {
		p, ok := r.get(uid)
		if !ok {
			return
		}
		select {
		case <-p.done:
			done <- uid
		default:
		}
	})
	const parallelism = 100
	cpu0 := selfCPU()
	b.ResetTimer()
	running := map[types.UID]bool{}
	started := 0
	for finished := 0; finished < b.N; {
		for started < b.N && len(running) < parallelism {
			uid := types.UID(fmt.Sprintf("bench-%d", started))
			pod := testPod(string(uid), corev1.RestartPolicyNever, corev1.Container{Name: "c", Image: "x", Command: []string{"true"}})
			if err := r.StartPod(context.Background(), pod, fakeResolver{}); err != nil {
				b.Fatal(err)
			}
			running[uid] = true
			started++
		}
		uid := <-done
		if running[uid] {
			delete(running, uid)
			finished++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/pod")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
