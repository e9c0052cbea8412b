package shim

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStateFile(t *testing.T) {
	base := filepath.Join(t.TempDir(), "main.0")
	if st, err := ReadState(base); err != nil || st != nil {
		t.Fatalf("no state file: %+v, %v", st, err)
	}
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := State{Phase: PhaseRunning, Pid: 12345, PidStart: 987654321, StartedAt: end.Add(-time.Minute)}
	short := State{Phase: PhaseExited, ExitCode: 3, FinishedAt: end}
	for _, st := range []State{long, short} {
		if err := WriteState(base, st); err != nil {
			t.Fatal(err)
		}
		got, err := ReadState(base)
		if err != nil || got.Phase != st.Phase || got.ExitCode != st.ExitCode || got.Pid != st.Pid || !got.FinishedAt.Equal(st.FinishedAt) {
			t.Fatalf("read %+v, %v; want %+v (a shorter state replaces a longer one whole)", got, err, st)
		}
		if got.ShimPid != 0 {
			t.Fatalf("an agent's record carries shim pid %d", got.ShimPid)
		}
	}
	for _, torn := range []string{"", `{"phase":"exi`, `{}`} {
		if err := os.WriteFile(base+".state", []byte(torn), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadState(base); err != nil || got.Phase != PhaseStarting {
			t.Fatalf("torn %q: %+v, %v; want starting", torn, got, err)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file, path, want, err string
	}{
		{"tool", bin, filepath.Join(bin, "tool"), ""},
		{"tool", "/nonexistent:" + bin, filepath.Join(bin, "tool"), ""},
		{"data", bin, "", "executable file not found in $PATH"},
		{"bin/tool", "", filepath.Join(bin, "tool"), ""},
		{"bin/data", "", "", "permission denied"},
		{"bin/none", "", "", "no such file or directory"},
		{"bin", "", "", "executable file not found in $PATH"},
	} {
		got, err := LookPath(tc.file, tc.path, dir)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("LookPath(%q, %q) = %q, %v; want %q, %q", tc.file, tc.path, got, err, tc.want, tc.err)
		}
	}
	if got := pathOf([]string{"HOME=/", "PATH=/x:/y"}); got != "/x:/y" {
		t.Errorf("pathOf = %q", got)
	}
	if got := pathOf(nil); got != DefaultPath {
		t.Errorf("pathOf(nil) = %q", got)
	}
}

// A shim rewrites its state in place through one open file: each record
// reads back whole whether it is longer or shorter than the one before.
func TestStateRewrittenInPlace(t *testing.T) {
	base := filepath.Join(t.TempDir(), "main.0")
	s, err := openState(base)
	if err != nil {
		t.Fatal(err)
	}
	defer s.f.Close()
	s.shimPid, s.shimStart = 42, 7
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, st := range []State{
		{Phase: PhaseStarting},
		{Phase: PhaseRunning, Pid: 12345, PidStart: 987654321, StartedAt: end.Add(-time.Minute)},
		{Phase: PhaseExited, ExitCode: 1},
		{Phase: PhaseExited, ExitCode: 3, Pid: 12345, PidStart: 987654321, StartedAt: end.Add(-time.Minute), FinishedAt: end},
	} {
		if err := s.write(st); err != nil {
			t.Fatal(err)
		}
		got, err := ReadState(base)
		if err != nil || got.Phase != st.Phase || got.ExitCode != st.ExitCode || got.Pid != st.Pid || !got.FinishedAt.Equal(st.FinishedAt) || got.ShimPid != 42 {
			t.Fatalf("read %+v, %v; want %+v from shim 42", got, err, st)
		}
	}
}

// A shim closes its state file while the container runs and opens it again
// for the end's record, which replaces the running one whole; once the
// attempt's directory is gone the record goes nowhere and makes no file.
func TestStateReopenedForTheEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pod")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "main.0")
	s, err := openState(base)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.shimPid = 42
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	running := State{Phase: PhaseRunning, Pid: 12345, PidStart: 987654321, StartedAt: end.Add(-time.Minute)}
	exited := State{Phase: PhaseExited, ExitCode: 3, FinishedAt: end}
	for _, st := range []State{running, exited} {
		if err := s.write(st); err != nil {
			t.Fatal(err)
		}
		s.close()
		got, err := ReadState(base)
		if err != nil || got.Phase != st.Phase || got.ExitCode != st.ExitCode || got.Pid != st.Pid || !got.FinishedAt.Equal(st.FinishedAt) || got.ShimPid != 42 {
			t.Fatalf("read %+v, %v; want %+v from shim 42", got, err, st)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.write(exited); err != nil {
		t.Fatalf("record of a removed attempt: %v", err)
	}
	if _, err := os.Stat(base + ".state"); !os.IsNotExist(err) {
		t.Fatalf("the record of a removed attempt made a file: %v", err)
	}
}
