//go:build cgo && linux && amd64

package cspawn

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStart starts /bin/true in new PID, mount and UTS namespaces
// (as an init starts) through syscall.ForkExec and through the Spawner,
// with the parent holding more descriptors (as the supervisor does, about
// six per running container), and reports the children's CPU per start
// (the part before the exec is the child's).
func BenchmarkStart(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("new namespaces need root")
	}
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	starts := []struct {
		name  string
		start func(path string, argv []string, attr Attr) (int, error)
	}{
		{"syscall.ForkExec", forkExec},
		{"Spawner", func(path string, argv []string, attr Attr) (int, error) {
			pid, ok, err := s.Start(path, argv, attr)
			if !ok {
				b.Skip("this kernel lacks what the Spawner needs")
			}
			return pid, err
		}},
	}
	for _, held := range []int{0, 1000, 6000} {
		fds := holdDescriptors(b, held)
		for _, st := range starts {
			b.Run(fmt.Sprintf("held=%d/%s", held, st.name), func(b *testing.B) {
				attr := Attr{Dir: "/", Files: []int{0, 1, 2}, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}
				cpu0 := childrenCPU()
				for b.Loop() {
					pid, err := st.start("/bin/true", []string{"true"}, attr)
					if err != nil {
						b.Fatal(err)
					}
					var ws syscall.WaitStatus
					if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((childrenCPU()-cpu0).Microseconds())/float64(b.N), "children-cpu-µs/op")
			})
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}
}

// holdDescriptors opens n close-on-exec descriptors (pipes' ends, as the
// supervisor's are mostly).
func holdDescriptors(b *testing.B, n int) []int {
	var fds []int
	for len(fds) < n {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			b.Fatalf("pipe2 (%d open): %v", len(fds), err)
		}
		fds = append(fds, p[0], p[1])
	}
	return fds
}

func childrenCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
