package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	b.Run("shim=agent-binary", func(b *testing.B) { benchmarkPodsOfTrue(b, selfExe, false) })
	var bin string
	build := func(b *testing.B) {
		if bin != "" {
			return
		}
		bin = filepath.Join(os.TempDir(), fmt.Sprintf("bench-%d-%s", os.Getpid(), ShimBinaryName))
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/batchlet-shim").CombinedOutput()
		if err != nil {
			b.Skipf("build batchlet-shim: %v: %s", err, out)
		}
	}
	defer func() {
		if bin != "" {
			os.Remove(bin)
		}
	}()
	b.Run("shim=batchlet-shim", func(b *testing.B) {
		build(b)
		benchmarkPodsOfTrue(b, bin, false)
	})
	b.Run("shim=supervisor", func(b *testing.B) {
		build(b)
		benchmarkPodsOfTrue(b, bin, true)
	})
}

func benchmarkPodsOfTrue(b *testing.B, shimBinary string, supervisor bool) {
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), ShimBinary: shimBinary, ShimSupervisor: supervisor})
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
	cpu0, children0 := selfCPU(), childrenCPU()+liveChildrenCPU()
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
	b.ReportMetric(float64((childrenCPU()+liveChildrenCPU()-children0).Microseconds())/float64(b.N), "pods-cpu-µs/pod")
}

// liveChildrenCPU is the CPU of this process's children that still run
// (the shim supervisor), with that of the children they reaped.
func liveChildrenCPU() time.Duration {
	entries, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 || f[1] != strconv.Itoa(os.Getpid()) || pid == os.Getpid() {
			continue
		}
		for _, v := range f[11:15] { // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(n) * time.Second / clockTicks
		}
	}
	return total
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

func selfCPU() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

// childrenCPU is the CPU of the reaped shims and, through them, of the
// containers' processes.
func childrenCPU() time.Duration { return rusageCPU(syscall.RUSAGE_CHILDREN) }

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
