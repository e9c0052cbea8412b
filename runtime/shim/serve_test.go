package shim

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// openFDs is how many descriptors this process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries) - 1 // the directory's own
}

// A running container costs the supervisor (serve from its spawner) the
// lock, the two tee pipes and the read ends of its output pipes: no state
// file, log file or pidfd, as every descriptor it holds is copied into each
// container it starts. Its end is recorded once it is killed.
func TestServeHoldsFewDescriptorsWhileRunning(t *testing.T) {
	sleep, err := LookPath("sleep", DefaultPath, "")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "c.0")
	spec, _ := json.Marshal(Spec{Argv: []string{sleep, "60"}, Env: []string{"PATH=" + DefaultPath}, WorkDir: dir, LogPath: base + ".log"})
	if err := os.WriteFile(base+".shim", spec, 0o600); err != nil {
		t.Fatal(err)
	}
	// The poller's own descriptors exist before counting.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	pw.Close()
	sp := newSpawner()
	before := openFDs(t)

	lock, err := os.Open(base + ".shim")
	if err != nil {
		t.Fatal(err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer statusR.Close()
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	var tees [2][2]int
	for i := range tees {
		if err := syscall.Pipe2(tees[i][:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(tees[i][0])
	}
	files := attemptFiles{lock: lock, status: statusW, stdin: stdin, teeOut: tees[0][1], teeErr: tees[1][1]}
	served := make(chan int)
	go func() { served <- serve(base+".shim", files, 0, 0, sp) }()
	b, err := io.ReadAll(statusR) // EOF once the running record is written
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil || st.Phase != PhaseRunning {
		t.Fatalf("status %q: %v", b, err)
	}
	defer syscall.Kill(st.Pid, syscall.SIGKILL)
	// The test's own: the status and tee read ends. serve's: the lock,
	// the tee write ends, the output pipes' read ends.
	if got, want := openFDs(t)-before, 3+5; got != want {
		t.Errorf("descriptors open while the container runs: %d more than before; want %d", got, want)
	}
	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := <-served; code != 0 {
		t.Fatalf("serve returned %d", code)
	}
	end, err := ReadState(base)
	if err != nil || end.Phase != PhaseExited || end.Signal != int(syscall.SIGKILL) || end.ExitCode != -1 {
		t.Fatalf("end record %+v, %v; want exited by SIGKILL", end, err)
	}
	if _, err := os.Stat(base + ".log"); err != nil {
		t.Fatalf("the log file is made at the start: %v", err)
	}
}
