package process

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPodsOfTrue runs pods of one `true` container, 100 at a time, as
// the process bench's Job does, and reports the runtime's own CPU per pod
// and that of the pods' processes (shim, container init, `true`), with the
// shims run by the agent's own binary (here the test binary) and by
// batchlet-shim (built for the benchmark). The pod directories are under
// $TMPDIR.
func BenchmarkPodsOfTrue(b *testing.B) {
	b.Run("shim=agent-binary", func(b *testing.B) { benchmarkPodsOfTrue(b, selfExe) })
	b.Run("shim=batchlet-shim", func(b *testing.B) {
		bin := filepath.Join(b.TempDir(), ShimBinaryName)
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/batchlet-shim").CombinedOutput()
		if err != nil {
			b.Skipf("build batchlet-shim: %v: %s", err, out)
		}
		benchmarkPodsOfTrue(b, bin)
	})
}

func benchmarkPodsOfTrue(b *testing.B, shimBinary string) {
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), ShimBinary: shimBinary})
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
	cpu0, children0 := selfCPU(), childrenCPU()
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
	b.ReportMetric(float64((childrenCPU()-children0).Microseconds())/float64(b.N), "pods-cpu-µs/pod")
}

func selfCPU() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

// childrenCPU is the CPU of the reaped shims and, through them, of the
// containers' processes.
func childrenCPU() time.Duration { return rusageCPU(syscall.RUSAGE_CHILDREN) }

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
