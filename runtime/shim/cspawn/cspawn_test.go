//go:build cgo && linux && amd64

package cspawn

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// observe is what a child reports of its start: its status (signals,
// credentials, namespaces' pids, umask), limits, the descriptors it was
// given (those it inherits beyond them: see TestStartCopiesNoDescriptors),
// its working directory, cgroup (v2), argv and environment.
const observe = `
grep -E '^(Sig(Blk|Ign|Cgt)|Shd|Cap|NoNewPrivs|Uid|Gid|Groups|NSpid|NSsid|NSpgid|Umask)' /proc/self/status
cat /proc/self/limits
ls /proc/$$/fd | grep -x '[0-3]'
readlink /proc/self/cwd
grep '^0::' /proc/self/cgroup
echo "$0 $1 $FOO"
`

// started is how a child started and what it reported.
type started struct {
	out, status string
	err         error
	exited      syscall.WaitStatus
}

// startWith starts /bin/sh running observe with attr, through start (the
// Spawner's or syscall.ForkExec), its output and status pipes as
// descriptors 1, 2 and 3, and waits for it.
func startWith(t *testing.T, path string, attr Attr, start func(path string, argv []string, attr Attr) (int, error)) started {
	t.Helper()
	return startArgv(t, path, []string{"sh", "-c", observe, "arg0", "arg1"}, attr, start)
}

// startArgv is startWith running path with argv.
func startArgv(t *testing.T, path string, argv []string, attr Attr, start func(path string, argv []string, attr Attr) (int, error)) started {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stR.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	attr.Files = []int{int(devnull.Fd()), int(outW.Fd()), int(outW.Fd()), int(stW.Fd())}
	pid, err := start(path, argv, attr)
	outW.Close()
	stW.Close()
	if err != nil {
		return started{err: err}
	}
	out, _ := io.ReadAll(outR)
	status, _ := io.ReadAll(stR)
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	return started{out: string(out), status: string(status), exited: ws}
}

// forkExec is syscall.ForkExec with attr, as the supervisor started inits.
func forkExec(path string, argv []string, attr Attr) (int, error) {
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: attr.Pdeathsig, Cloneflags: attr.Cloneflags}
	if attr.CgroupFD >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, attr.CgroupFD
	}
	files := make([]uintptr, len(attr.Files))
	for i, fd := range attr.Files {
		files[i] = uintptr(fd)
	}
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: attr.Dir, Env: attr.Env, Files: files, Sys: sys})
}

func newSpawner(t *testing.T) *Spawner {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func spawnWith(t *testing.T, s *Spawner) func(path string, argv []string, attr Attr) (int, error) {
	return func(path string, argv []string, attr Attr) (int, error) {
		pid, ok, err := s.Start(path, argv, attr)
		if !ok {
			t.Skip("this kernel lacks clone3's CLONE_CLEAR_SIGHAND or close_range's CLOSE_RANGE_UNSHARE")
		}
		return pid, err
	}
}

// hostPids are the host's pids in the namespaces' pids, which differ
// between any two starts; without CLONE_NEWPID the lines go whole.
var (
	hostPids      = regexp.MustCompile(`(?m)^(NSpid|NSsid|NSpgid):\t[0-9]+`)
	volatileLines = regexp.MustCompile(`(?m)^(NSpid|NSsid|NSpgid):[^\n]*\n`)
)

// TestStartAsForkExec: a child the Spawner starts sees what one
// syscall.ForkExec starts with the same attributes sees, and a start that
// fails fails with the same errno.
func TestStartAsForkExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("new namespaces need root")
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"FOO=bar baz", "PATH=/usr/bin:/bin"}
	ns := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS)
	tests := []struct {
		name    string
		path    string
		attr    Attr
		wantErr error
	}{
		{"new namespaces", "/bin/sh", Attr{Env: env, Dir: "/", Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, nil},
		{"working directory", "/bin/sh", Attr{Env: env, Dir: dir, Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, nil},
		{"no namespaces", "/bin/sh", Attr{Env: env, Dir: "/", CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, nil},
		{"missing command", filepath.Join(dir, "missing"), Attr{Env: env, Dir: "/", Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, syscall.ENOENT},
		{"not executable", notExec, Attr{Env: env, Dir: "/", Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, syscall.EACCES},
		{"missing directory", "/bin/sh", Attr{Env: env, Dir: filepath.Join(dir, "missing"), Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, syscall.ENOENT},
		{"NUL in the environment", "/bin/sh", Attr{Env: []string{"FOO=a\x00b"}, Dir: "/", Cloneflags: ns, CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, syscall.EINVAL},
	}
	cg, cgFD := newCgroup(t)
	if cgFD >= 0 {
		tests = append(tests, struct {
			name    string
			path    string
			attr    Attr
			wantErr error
		}{"cgroup", "/bin/sh", Attr{Env: env, Dir: "/", Cloneflags: ns, CgroupFD: cgFD, Pdeathsig: syscall.SIGKILL}, nil})
	}
	s := newSpawner(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := startWith(t, tt.path, tt.attr, forkExec)
			got := startWith(t, tt.path, tt.attr, spawnWith(t, s))
			if !errors.Is(want.err, tt.wantErr) || !errors.Is(got.err, tt.wantErr) {
				t.Fatalf("errors: syscall.ForkExec %v, Spawner %v; want %v", want.err, got.err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if want.exited != 0 || got.exited != 0 {
				t.Fatalf("exit: syscall.ForkExec %#x, Spawner %#x; output:\n%s\n%s", want.exited, got.exited, want.out, got.out)
			}
			strip := func(out string) string {
				if tt.attr.Cloneflags == 0 {
					return volatileLines.ReplaceAllString(out, "")
				}
				return hostPids.ReplaceAllString(out, "$1:")
			}
			want.out, got.out = strip(want.out), strip(got.out)
			if tt.attr.CgroupFD >= 0 && !strings.Contains(got.out, "/"+cg+"\n") {
				t.Errorf("the Spawner's child is not in the cgroup:\n%s", got.out)
			}
			if got.out != want.out || got.status != want.status {
				t.Errorf("syscall.ForkExec's child saw:\n%s%q\nthe Spawner's:\n%s%q", want.out, want.status, got.out, got.status)
			}
			// The signal mask as the command gets it (a shell resets its own).
			sigs := []string{"grep", "-E", "^(Sig(Pnd|Blk|Ign|Cgt)|ShdPnd)", "/proc/self/status"} // not SigQ: the user's, system-wide
			want, got = startArgv(t, "/bin/grep", sigs, tt.attr, forkExec), startArgv(t, "/bin/grep", sigs, tt.attr, spawnWith(t, s))
			if got.out != want.out || got.err != nil || want.err != nil {
				t.Errorf("syscall.ForkExec's grep saw (%v):\n%s\nthe Spawner's (%v):\n%s", want.err, want.out, got.err, got.out)
			}
		})
	}
}

// TestStartCopiesNoDescriptors: a descriptor the parent holds above the
// reserved ones never reaches the child, even one without close-on-exec
// (syscall.ForkExec's child inherits it: the fixture is real), so none is
// copied into the child and closed at its exec.
func TestStartCopiesNoDescriptors(t *testing.T) {
	s := newSpawner(t)
	var leaked []int
	for range 64 {
		fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0) // no O_CLOEXEC
		if err != nil {
			t.Fatal(err)
		}
		leaked = append(leaked, fd)
	}
	defer func() {
		for _, fd := range leaked {
			syscall.Close(fd)
		}
	}()
	last := strconv.Itoa(leaked[len(leaked)-1])
	tests := []struct {
		name       string
		start      func(path string, argv []string, attr Attr) (int, error)
		wantLeaked bool
	}{
		{"syscall.ForkExec", forkExec, true},
		{"Spawner", spawnWith(t, s), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := startArgv(t, "/bin/ls", []string{"ls", "/proc/self/fd"}, Attr{Dir: "/", CgroupFD: -1, Pdeathsig: syscall.SIGKILL}, tt.start)
			if got.err != nil {
				t.Fatal(got.err)
			}
			fds := regexp.MustCompile(`(?m)^[0-9]+$`).FindAllString(got.out, -1)
			if leakedSeen := slices.Contains(fds, last); leakedSeen != tt.wantLeaked {
				t.Errorf("the child holds descriptor %s: %v, want %v; its descriptors: %v", last, leakedSeen, tt.wantLeaked, fds)
			}
			for _, fd := range fds {
				// Below keepBelow: those copied (the slots the parent had
				// when New reserved its own) and ls's directory.
				if n, _ := strconv.Atoi(fd); !tt.wantLeaked && n > s.keepBelow {
					t.Errorf("the child holds descriptor %d, above %d; its descriptors: %v", n, s.keepBelow, fds)
				}
			}
		})
	}
}

// TestStartLeavesParentsDescriptors: the parent's descriptors, those it
// handed the child included, are its own after a start, and the reserved
// slots hold none of the child's (the child's pipes close with it).
func TestStartLeavesParentsDescriptors(t *testing.T) {
	s := newSpawner(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, ok, err := s.Start("/bin/true", []string{"true"}, Attr{Dir: "/", Files: []int{0, int(w.Fd()), int(w.Fd())}, CgroupFD: -1, Pdeathsig: syscall.SIGKILL})
	if !ok {
		t.Skip("this kernel lacks what the Spawner needs")
	}
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("wait: %v, %v", err, ws)
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatalf("the parent's write end: %v", err)
	}
	w.Close()
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "x" {
		t.Fatalf("read %q, %v: want x and EOF (no reserved slot holding the pipe)", b, err)
	}
}

// newCgroup makes a cgroup (v2) for the test, open, and returns its path
// under the hierarchy and descriptor; -1 where there is no cgroup2
// hierarchy or it cannot be written.
func newCgroup(t *testing.T) (string, int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", -1
	}
	m := regexp.MustCompile(`(?m)^\S+ \S+ \S+ \S+ (\S+) .* - cgroup2 `).FindStringSubmatch(string(b))
	if m == nil {
		return "", -1
	}
	dir, err := os.MkdirTemp(m[1], "cspawn-test-")
	if err != nil {
		return "", -1
	}
	t.Cleanup(func() { syscall.Rmdir(dir) })
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", -1
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return filepath.Base(dir), fd
}

// TestStartRestoresOpenFilesLimit: the child gets RLIMIT_NOFILE as the
// process started with it, before the Go runtime raised its soft limit,
// as syscall.ForkExec's child does. The test runs itself again with a
// lower soft limit to see it.
func TestStartRestoresOpenFilesLimit(t *testing.T) {
	if os.Getenv("CSPAWN_NOFILE_HELPER") != "" {
		s := newSpawner(t)
		limits := []string{"grep", "Max open files", "/proc/self/limits"}
		attr := Attr{Dir: "/", CgroupFD: -1, Pdeathsig: syscall.SIGKILL}
		want, got := startArgv(t, "/bin/grep", limits, attr, forkExec), startArgv(t, "/bin/grep", limits, attr, spawnWith(t, s))
		if got.out != want.out || !strings.Contains(got.out, " 512 ") {
			t.Errorf("syscall.ForkExec's child's limit:\n%s\nthe Spawner's:\n%s\nwant a soft limit of 512", want.out, got.out)
		}
		return
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max <= 512 {
		t.Skip("no room below the hard limit")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit")
	}
	cmd := exec.Command(prlimit, "--nofile=512:"+strconv.FormatUint(lim.Max, 10), os.Args[0], "-test.run", "^TestStartRestoresOpenFilesLimit$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CSPAWN_NOFILE_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("%v: %s", err, out)
	}
}
