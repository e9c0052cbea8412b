package process

// A container of the process runtime is owned by a shim: the agent's own
// binary re-executed with argv[0] shimArg0, in a session of its own and
// without a parent-death signal, so that it outlives the agent. The shim
// starts the container (in its namespaces, as startNamespaced makes them),
// writes its stdout and stderr to the CRI log file itself, waits for it and
// records how it ended in the attempt's state file, then exits. The
// container's parent-death signal ties it to its shim, not to the agent.
//
// Each attempt n of container c leaves these files in the pod's directory:
//
//	c.n.shim   the shim's spec, written by the agent before it starts the
//	           shim (an attempt is on record before anything runs)
//	c.n.lock   flock'ed by the agent, then by the shim through the open
//	           file description it inherits: held exactly while a shim of
//	           the attempt may still run the container
//	c.n.state  the shim's record: starting, running (pid, start time),
//	           exited (exit code or signal, finishedAt) or a start error
//
// A restarted agent classifies each container's last recorded attempt from
// these (classifyAttempt) and adopts live shims, reports recorded ends, and
// counts an attempt that started but whose shim is gone without a record
// (a host reboot) as lost: a container is adopted or known dead, never
// started twice.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// shimArg0 is argv[0] of a shim; argv[1] is the path of its spec.
const shimArg0 = "batchlet-shim"

// File descriptors a shim inherits besides stdin (the container's).
const (
	shimLockFD   = 3 // the attempt's lock, held for the shim's life
	shimStatusFD = 4 // the start's outcome, then closed
	shimTeeOutFD = 5 // copies of stdout for attach, while the agent reads
	shimTeeErrFD = 6 // copies of stderr
)

// shimSpec is what a shim runs: the container's command as the agent
// resolved it.
type shimSpec struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	WorkDir string   `json:"workDir"`
	// Namespaces: the container is PID 1 of its own PID namespace, in the
	// mount and UTS namespaces NS describes.
	Namespaces bool          `json:"namespaces,omitempty"`
	NS         shimNamespace `json:"ns"`
	CgroupDir  string        `json:"cgroupDir,omitempty"`
	LogPath    string        `json:"logPath"`
	Image      string        `json:"image"`
}

// shimNamespace is containerNS in JSON.
type shimNamespace struct {
	Hostname  string      `json:"hostname"`
	HostsFile string      `json:"hostsFile"`
	TmpDir    string      `json:"tmpDir"`
	Mounts    []shimMount `json:"mounts,omitempty"`
}

type shimMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

func (n shimNamespace) containerNS() containerNS {
	ns := containerNS{hostname: n.Hostname, hostsFile: n.HostsFile, tmpDir: n.TmpDir}
	for _, m := range n.Mounts {
		ns.mounts = append(ns.mounts, mount{source: m.Source, target: m.Target, readOnly: m.ReadOnly})
	}
	return ns
}

func toShimNamespace(ns containerNS) shimNamespace {
	out := shimNamespace{Hostname: ns.hostname, HostsFile: ns.hostsFile, TmpDir: ns.tmpDir}
	for _, m := range ns.mounts {
		out.Mounts = append(out.Mounts, shimMount{Source: m.source, Target: m.target, ReadOnly: m.readOnly})
	}
	return out
}

// Phases of a shim's state file.
const (
	phaseStarting = "starting"
	phaseRunning  = "running"
	phaseExited   = "exited"
)

// shimState is an attempt's state file.
type shimState struct {
	Phase string `json:"phase"`
	// Pid and PidStart (clock ticks after boot, /proc/<pid>/stat field 22)
	// identify the container process; PIDs are reused.
	Pid       int       `json:"pid,omitempty"`
	PidStart  uint64    `json:"pidStart,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// ExitCode, or Signal when a signal ended the container.
	ExitCode   int       `json:"exitCode"`
	Signal     int       `json:"signal,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// StartError: the command could not start (exited at once).
	StartError string `json:"startError,omitempty"`
	// ShimPid and ShimStart identify the shim itself.
	ShimPid   int    `json:"shimPid,omitempty"`
	ShimStart uint64 `json:"shimStart,omitempty"`
}

func init() {
	if len(os.Args) != 2 || os.Args[0] != shimArg0 {
		return
	}
	os.Exit(runShim(os.Args[1]))
}

// runShim is the shim's main: it returns its exit code.
func runShim(specPath string) int {
	for fd := shimLockFD; fd <= shimTeeErrFD; fd++ {
		unix.CloseOnExec(fd) // the container inherits none of them
	}
	status := os.NewFile(shimStatusFD, "status")
	base := strings.TrimSuffix(specPath, ".shim")
	fail := func(err error) int {
		_ = writeState(base, shimState{Phase: phaseExited, ExitCode: 128, StartError: err.Error(), FinishedAt: time.Now().UTC()})
		fmt.Fprint(status, err.Error())
		status.Close()
		return 1
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fail(fmt.Errorf("read shim spec: %w", err))
	}
	var spec shimSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail(fmt.Errorf("parse shim spec: %w", err))
	}
	if err := writeState(base, shimState{Phase: phaseStarting}); err != nil {
		return fail(err)
	}
	sh, err := startShimmed(spec)
	if err != nil {
		return fail(err)
	}
	st := shimState{Phase: phaseRunning, Pid: sh.pid, PidStart: sh.pidStart, StartedAt: time.Now().UTC()}
	if err := writeState(base, st); err != nil {
		// The container runs; an adopting agent counts it as lost.
		fmt.Fprint(os.Stderr, err)
	}
	b, _ = json.Marshal(st)
	_, _ = status.Write(b)
	status.Close()
	<-sh.exited
	t := time.NewTimer(2 * time.Second)
	select {
	case <-sh.drained:
	case <-t.C: // a background child holds the pipe
	}
	st.Phase, st.FinishedAt = phaseExited, time.Now().UTC()
	st.ExitCode = sh.cmd.ProcessState.ExitCode()
	if ws, ok := sh.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = int(ws.Signal())
	}
	if err := writeState(base, st); err != nil {
		fmt.Fprint(os.Stderr, err)
		return 1
	}
	return 0
}

// shimmed is the container a shim started.
type shimmed struct {
	cmd      *exec.Cmd
	pid      int
	pidStart uint64
	exited   chan struct{}
	drained  chan struct{}
}

// startShimmed starts the container of spec with its output going to the
// log file (and the tee descriptors).
func startShimmed(spec shimSpec) (*shimmed, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command")
	}
	f, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	sh := &shimmed{exited: make(chan struct{}), drained: make(chan struct{})}
	cmd := &exec.Cmd{Path: spec.Argv[0], Args: spec.Argv, Env: spec.Env, Dir: spec.WorkDir, Stdin: os.Stdin,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if spec.CgroupDir != "" {
		if cg, err := os.Open(spec.CgroupDir); err == nil {
			defer cg.Close()
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	sh.cmd = cmd
	env := parseEnviron(spec.Env)
	resolve := func() error {
		path, err := lookPath(cmd.Args[0], env, cmd.Dir)
		if err != nil {
			return fmt.Errorf("exec: %q: %w", cmd.Args[0], err)
		}
		cmd.Path = path
		return nil
	}
	onStart := func() { sh.pid, sh.pidStart = cmd.Process.Pid, pidStartTime(cmd.Process.Pid) }
	if spec.Namespaces {
		err = startNamespaced(cmd, spec.NS.containerNS(), resolve, onStart, sh.exited)
	} else {
		err = startPlain(cmd, resolve, onStart, sh.exited)
	}
	outW.Close()
	errW.Close()
	if err != nil {
		return nil, err
	}
	tees := [2]*teeFD{{fd: shimTeeOutFD}, {fd: shimTeeErrFD}}
	for _, t := range tees {
		_ = unix.SetNonblock(t.fd, true)
	}
	lf := &logFile{f: f, now: time.Now, tee: func(stream string, p []byte) {
		if stream == "stdout" {
			tees[0].write(p)
		} else {
			tees[1].write(p)
		}
	}}
	stdoutDone := make(chan struct{})
	go func() {
		lf.copyLines("stdout", bufio.NewReaderSize(outR, maxLogLine))
		outR.Close()
		close(stdoutDone)
	}()
	go func() {
		lf.copyLines("stderr", bufio.NewReaderSize(errR, maxLogLine))
		errR.Close()
		<-stdoutDone
		f.Close()
		_ = unix.Close(shimTeeOutFD)
		_ = unix.Close(shimTeeErrFD)
		close(sh.drained)
	}()
	return sh, nil
}

// startPlain starts cmd as a process group of its own, waited for on a
// thread that lives as long as it does (its parent-death signal fires when
// the starting thread ends).
func startPlain(cmd *exec.Cmd, resolve func() error, onStart func(), exited chan<- struct{}) error {
	started := make(chan error, 1)
	onThreadOfItsOwn(func() {
		if err := resolve(); err != nil {
			started <- err
			return
		}
		cmd.SysProcAttr.Setpgid = true
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		onStart()
		started <- nil
		_ = cmd.Wait()
		close(exited)
	})
	return <-started
}

// teeFD copies output to the agent while it reads it, without ever
// blocking the container: chunks the pipe has no room for are dropped, and
// once the agent is gone (EPIPE) nothing is copied.
type teeFD struct {
	fd   int
	dead bool
}

func (t *teeFD) write(p []byte) {
	if t.dead {
		return
	}
	for len(p) > 0 {
		n, err := unix.Write(t.fd, p)
		if err != nil {
			t.dead = err != unix.EAGAIN && err != unix.EINTR
			return
		}
		p = p[n:]
	}
}

// writeState replaces the state file of the attempt whose files start with
// base, atomically.
func writeState(base string, st shimState) error {
	if os.Args[0] == shimArg0 {
		st.ShimPid = os.Getpid()
		st.ShimStart = pidStartTime(st.ShimPid)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := base + ".state.tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write shim state: %w", err)
	}
	if err := os.Rename(tmp, base+".state"); err != nil {
		return fmt.Errorf("write shim state: %w", err)
	}
	return nil
}

// readState reads an attempt's state file; nil when there is none.
func readState(base string) (*shimState, error) {
	b, err := os.ReadFile(base + ".state")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shim state: %w", err)
	}
	var st shimState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("parse shim state %s: %w", base, err)
	}
	return &st, nil
}

// pidStartTime is field 22 of /proc/<pid>/stat (0 when gone).
func pidStartTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// sameProcess reports whether pid still is the process that started at
// start (a PID is reused once its process is reaped).
func sameProcess(pid int, start uint64) bool {
	return pid > 0 && start != 0 && pidStartTime(pid) == start
}

func parseEnviron(env []string) []envVar {
	out := make([]envVar, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, envVar{k, v})
	}
	return out
}

// attemptBase is the common prefix of attempt n's files.
func (p *pod) attemptBase(container string, n int) string {
	return filepath.Join(p.dir, container+"."+strconv.Itoa(n))
}
