package process

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

func TestReadSmallFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 1024, 5000} {
		want := bytes.Repeat([]byte("x"), size)
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readSmallFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: readSmallFile = %d bytes, %v; want %d bytes", size, len(got), err, size)
		}
	}
	if _, err := readSmallFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}

// result reads the state file without shim.ReadState: it must end every
// attempt as that did, a state that is not an exit counting as killed.
func TestShimRefResult(t *testing.T) {
	finished := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		state    *shim.State // nil: no state file
		raw      string      // written as is when set
		code     int32
		sig      syscall.Signal
		finished time.Time
	}{
		{name: "no state file", sig: syscall.SIGKILL},
		{name: "unparsable", raw: "{half", sig: syscall.SIGKILL},
		{name: "empty", raw: "", sig: syscall.SIGKILL},
		{name: "running", state: &shim.State{Phase: shim.PhaseRunning, Pid: 1}, sig: syscall.SIGKILL},
		{name: "exited", state: &shim.State{Phase: shim.PhaseExited, ExitCode: 3, FinishedAt: finished}, code: 3, finished: finished},
		{name: "signalled", state: &shim.State{Phase: shim.PhaseExited, Signal: 15, FinishedAt: finished}, sig: syscall.SIGTERM, finished: finished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "c.0")
			switch {
			case tc.state != nil:
				if err := shim.WriteState(base, *tc.state); err != nil {
					t.Fatal(err)
				}
			case tc.name != "no state file":
				if err := os.WriteFile(base+".state", []byte(tc.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, sig, fin := (&shimRef{base: base}).result()
			if code != tc.code || sig != tc.sig || !fin.Equal(tc.finished) {
				t.Fatalf("result = %d, %v, %v; want %d, %v, %v", code, sig, fin, tc.code, tc.sig, tc.finished)
			}
		})
	}
}

// The shim gets blocking write ends that this process's poller never saw;
// the agent reads non-blocking ends. Both close on exec.
func TestChildPipeModes(t *testing.T) {
	r, w, err := childPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer unix.Close(w)
	flags := func(fd int, cmd int) int {
		v, err := unix.FcntlInt(uintptr(fd), cmd, 0)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if flags(int(r.Fd()), unix.F_GETFD)&unix.FD_CLOEXEC == 0 || flags(w, unix.F_GETFD)&unix.FD_CLOEXEC == 0 {
		t.Fatal("a pipe end is inherited across exec")
	}
	if flags(w, unix.F_GETFL)&unix.O_NONBLOCK != 0 {
		t.Fatal("the shim's end is non-blocking")
	}
	if _, err := unix.Write(w, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	unix.Close(w)
	w = -1
	buf := make([]byte, 8)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
}

// A container that wrote nothing has an empty log, read without opening it
// unless followed; one that wrote has its lines either way.
func TestLogsOfEmptyAndWrittenLogs(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u-emptylog", corev1.RestartPolicyNever, shC("quiet", "true"), shC("loud", "echo hi"))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u-emptylog", "done", func(s runtime.PodStatus) bool { return s.Done })
	tail := int64(10)
	for _, tc := range []struct {
		container string
		opts      runtime.LogOptions
		want      string
	}{
		{"quiet", runtime.LogOptions{}, ""},
		{"quiet", runtime.LogOptions{TailLines: &tail}, ""},
		{"quiet", runtime.LogOptions{Follow: true}, ""},
		{"loud", runtime.LogOptions{}, "hi\n"},
		{"loud", runtime.LogOptions{TailLines: &tail}, "hi\n"},
		{"loud", runtime.LogOptions{Follow: true}, "hi\n"},
	} {
		if got := logs(t, r, "u-emptylog", tc.container, tc.opts); got != tc.want {
			t.Fatalf("logs of %s with %+v = %q, want %q", tc.container, tc.opts, got, tc.want)
		}
	}
}
