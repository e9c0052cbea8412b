//go:build cgo && linux

package cinit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// observe is what a container reports of itself: its PID 1's status,
// mounts, limits, environment, descriptors, working directory, hostname,
// ids, /dev and /tmp.
const observe = `
echo "== mountinfo"; cut -d' ' -f4- /proc/1/mountinfo
echo "== limits"; cat /proc/1/limits
echo "== environ"; tr '\0' '\n' </proc/1/environ
echo "== cmdline"; tr '\0' ' ' </proc/1/cmdline; echo
echo "== fds"; ls /proc/1/fd
echo "== cwd"; readlink /proc/1/cwd
echo "== misc"; hostname; id; umask; cat /proc/1/oom_score_adj /proc/1/cgroup /proc/1/personality
echo "== dev"; ls -ln --time-style=+ /dev /dev/pts /dev/shm
echo "== tmp"; stat -c '%a %u %g %F' /tmp /etc/hosts /proc/kcore /proc/sys
echo "== status"; exec cat /proc/self/status
`

// volatile are /proc/PID/status lines that change from run to run (SigQ
// counts the signals queued for the user, system-wide).
var volatile = regexp.MustCompile(`(?m)^(Vm|Rss|Hugetlb|voluntary_ctxt|nonvoluntary_ctxt|SigQ)[^\n]*\n`)

// shimBinary builds batchlet-shim with this package's constructor.
func shimBinary(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("container inits need root")
	}
	bin := filepath.Join(t.TempDir(), "batchlet-shim")
	out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/batchlet-shim").CombinedOutput()
	if err != nil {
		t.Fatalf("build batchlet-shim: %v: %s", err, out)
	}
	return bin
}

// startInit runs bin as the container init of spec, with plan (the C
// init) or without (the Go init), as the shim starts one, and returns the
// container's output, what the init reported on the status descriptor
// and the exit code.
func startInit(t testing.TB, bin string, spec containerinit.Spec, plan string, env []string) (out, status string, code int) {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{containerinit.Arg0, string(b)}
	if plan != "" {
		args = append(args, plan)
	}
	args, env = shim.InitStart(args, env)
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer statusR.Close()
	var stdout bytes.Buffer
	cmd := &exec.Cmd{Path: bin, Args: args, Env: env, Dir: "/", Stdout: &stdout, Stderr: &stdout,
		ExtraFiles:  []*os.File{statusW},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: shim.InitCloneflags, Setsid: true, Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	statusW.Close()
	msg, _ := io.ReadAll(statusR)
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return volatile.ReplaceAllString(stdout.String(), ""), string(msg), code
}

// fixture is the host paths the specs use: a hosts file and a private
// /tmp under the host's /tmp, a volume, and a hidden directory outside
// /tmp with the pod's directory (kept visible) under it.
type fixture struct {
	hosts, tmp, volume, hidden, podDir string
}

func newFixture(t *testing.T) fixture { return newFixtureIn(t) }

func newFixtureIn(t testing.TB) fixture {
	t.Helper()
	if err := os.MkdirAll(containerinit.HostTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	hidden, err := os.MkdirTemp("/run", "cinit-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hidden) })
	f := fixture{hosts: filepath.Join(base, "hosts"), tmp: filepath.Join(base, "tmp"), volume: filepath.Join(base, "vol"),
		hidden: hidden, podDir: filepath.Join(hidden, "pods", "p1")}
	for _, d := range []string{f.tmp, f.volume, f.podDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{f.hosts, filepath.Join(f.volume, "data")} {
		if err := os.WriteFile(p, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.podDir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.podDir, "script"), []byte("#!/bin/sh\necho script \"$0\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// spec is a host container's spec as runtime/process builds it.
func (f fixture) spec(argv ...string) containerinit.Spec {
	return containerinit.Spec{Hostname: "pod-1", Argv: argv, WorkDir: f.podDir,
		Mounts: []containerinit.Mount{{Source: f.hosts, Target: "/etc/hosts"}, {Source: f.tmp, Target: "/tmp"},
			{Source: f.volume, Target: "/data/vol", ReadOnly: true}},
		Hide: []string{f.hidden}, Keep: []string{f.podDir}}
}

func int64p(v int64) *int64 { return &v }

// TestSamePathsSameContainer runs each spec through the C init and the Go
// init and compares what the container observes, or the failure the
// runtime is told.
func TestSamePathsSameContainer(t *testing.T) {
	bin := shimBinary(t)
	f := newFixture(t)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "FOO=bar baz", "EMPTY="}
	tests := []struct {
		name   string
		spec   func() containerinit.Spec
		env    []string
		status string // the failure's message; empty: the command runs
	}{
		{name: "default", spec: func() containerinit.Spec { return f.spec("/bin/sh", "-c", observe) }},
		{name: "user, groups, no caps but one, no_new_privs", spec: func() containerinit.Spec {
			s := f.spec("sh", "-c", observe)
			s.RunAsUser, s.Groups, s.NoNewPrivs = int64p(65534), []int64{1234, 5678}, true
			s.CapDrop, s.CapAdd = []string{"ALL"}, []string{"NET_BIND_SERVICE"}
			s.WorkDir, s.Keep = "/", nil
			return s
		}},
		{name: "privileged, group, a pod's HOME and GOMAXPROCS", env: []string{"HOME=/pod", "GOMAXPROCS=3", "PATH=/bin:/usr/bin"}, spec: func() containerinit.Spec {
			s := f.spec("/bin/sh", "-c", observe)
			s.Privileged, s.RunAsUser, s.RunAsGroup = true, int64p(1000), int64p(2000)
			s.WorkDir = "/var/tmp/new/dir"
			return s
		}},
		{name: "cap drop", spec: func() containerinit.Spec {
			s := f.spec("/bin/sh", "-c", observe)
			s.CapDrop = []string{"chown", "CAP_KILL"}
			return s
		}},
		{name: "the command's own status", spec: func() containerinit.Spec { return f.spec("cat", "/proc/self/status") }},
		{name: "no PATH: the default", env: []string{"PATH="}, spec: func() containerinit.Spec { return f.spec("echo", "ran") }},
		{name: "relative command in the working directory", spec: func() containerinit.Spec { return f.spec("./script", "a b") }},
		{name: "command not found", status: `exec: "no-such-command": executable file not found in $PATH`,
			spec: func() containerinit.Spec { return f.spec("no-such-command") }},
		{name: "not executable", status: `exec: "./noexec": permission denied`,
			spec: func() containerinit.Spec { return f.spec("./noexec") }},
		{name: "missing file", status: `exec: "/no/such": no such file or directory`,
			spec: func() containerinit.Spec { return f.spec("/no/such") }},
		{name: "working directory under a file", status: "create working directory " + f.podDir + "/noexec/sub: mkdir " + f.podDir + "/noexec: not a directory",
			spec: func() containerinit.Spec {
				s := f.spec("true")
				s.WorkDir = f.podDir + "/noexec/sub"
				return s
			}},
		{name: "missing volume", status: "mount /no/volume: stat /no/volume: no such file or directory",
			spec: func() containerinit.Spec {
				s := f.spec("true")
				s.Mounts = append(s.Mounts, containerinit.Mount{Source: "/no/volume", Target: "/v"})
				return s
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec()
			plan, ok := containerinit.CPlan(spec)
			if !ok {
				t.Fatal("CPlan: not a plan for the C init")
			}
			e := env
			if tt.env != nil {
				e = tt.env
			}
			goOut, goStatus, goCode := startInit(t, bin, spec, "", e)
			cOut, cStatus, cCode := startInit(t, bin, spec, plan, e)
			if goStatus != tt.status {
				t.Errorf("Go init's status = %q, want %q", goStatus, tt.status)
			}
			if cStatus != goStatus || cCode != goCode {
				t.Errorf("C init: status %q, exit %d; Go init: status %q, exit %d", cStatus, cCode, goStatus, goCode)
			}
			if testing.Verbose() {
				t.Logf("the Go init's container:\n%s", goOut)
			}
			if cOut != goOut {
				t.Errorf("the containers differ:\n%s", lineDiff(goOut, cOut))
			}
			if tt.status == "" && (goCode != 0 || goOut == "") {
				t.Errorf("the command did not run: exit %d, output:\n%s", goCode, goOut)
			}
		})
	}
}

// TestPlanRuns checks that the C init, not the Go init, runs a plan: the
// plan's command differs from the spec's.
func TestPlanRuns(t *testing.T) {
	bin := shimBinary(t)
	f := newFixture(t)
	spec := f.spec("echo", "Go")
	plan, _ := containerinit.CPlan(f.spec("echo", "C"))
	if out, status, _ := startInit(t, bin, spec, plan, []string{"PATH=/bin:/usr/bin"}); out != "C\n" || status != "" {
		t.Errorf("with a plan: output %q, status %q; want C", out, status)
	}
	if out, _, _ := startInit(t, bin, spec, "cinit0"+plan[6:], []string{"PATH=/bin:/usr/bin"}); out != "Go\n" {
		t.Errorf("with another version's plan: output %q; want the Go init's Go", out)
	}
}

// TestErrText checks the C init's errno texts against Go's.
func TestErrText(t *testing.T) {
	for e := 1; e < 200; e++ {
		if got, want := errText(e), syscall.Errno(e).Error(); got != want {
			t.Errorf("errno %d: C %q, Go %q", e, got, want)
		}
	}
}

// lineDiff lists the lines of a and b that differ, by position.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out.WriteString("Go: " + x + "\nC:  " + y + "\n")
		}
	}
	return out.String()
}

// BenchmarkInitTrue starts a `true` container through each init (as the
// shim does, new namespaces, the runtime's mounts) and reports the CPU the
// container's processes used per start (user+system, from the children's
// rusage), which does not depend on the machine's load as ns/op does.
func BenchmarkInitTrue(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("container inits need root")
	}
	bin := filepath.Join(b.TempDir(), "batchlet-shim")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/batchlet-shim").CombinedOutput(); err != nil {
		b.Fatalf("build batchlet-shim: %v: %s", err, out)
	}
	f := newFixtureIn(b)
	spec := f.spec("true")
	plan, _ := containerinit.CPlan(spec)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, bc := range []struct{ name, plan string }{{"init=Go", ""}, {"init=C", plan}} {
		b.Run(bc.name, func(b *testing.B) {
			before := childCPU()
			for b.Loop() {
				if _, status, code := startInit(b, bin, spec, bc.plan, env); status != "" || code != 0 {
					b.Fatalf("status %q, exit %d", status, code)
				}
			}
			b.ReportMetric(float64((childCPU()-before).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSameOpenFilesLimit: the Go init's runtime raises its soft limit of
// open files to the hard one at start and restores it for the exec; the
// C init never changes it. Both containers must see the starter's.
func TestSameOpenFilesLimit(t *testing.T) {
	bin := shimBinary(t)
	f := newFixture(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Max <= 512 {
		t.Skipf("hard limit of open files %d: nothing to raise", old.Max)
	}
	low := syscall.Rlimit{Cur: 512, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	spec := f.spec("sh", "-c", "ulimit -Sn; ulimit -Hn")
	plan, _ := containerinit.CPlan(spec)
	env := []string{"PATH=/bin:/usr/bin"}
	goOut, _, _ := startInit(t, bin, spec, "", env)
	cOut, _, _ := startInit(t, bin, spec, plan, env)
	if !strings.HasPrefix(goOut, "512\n") || cOut != goOut {
		t.Errorf("soft and hard limits: Go init's container %q, C init's %q; want 512 first in both", goOut, cOut)
	}
}
