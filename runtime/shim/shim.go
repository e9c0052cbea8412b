// Package shim is the process that owns one container of the process
// runtime (runtime/process) so that the container outlives the node agent:
// the agent's own binary re-executed with argv[0] Arg0, recognised by this
// package's init, which imports nothing but the standard library so that Go
// runs it before the rest of the binary initialises (a shim costs one exec,
// not the agent's start-up: os/exec and path/filepath, which Go initialises
// only after most of the binary's packages, are left out on purpose). It also holds what both the shim and the
// runtime use: the container's namespaces, the CRI log writer, the attempt's
// spec and state files.
//
// A container of the process runtime is owned by a shim: the agent's own
// binary re-executed with argv[0] shimArg0, in a session of its own and
// without a parent-death signal, so that it outlives the agent. The shim
// starts the container (in its namespaces, as startNamespaced makes them),
// writes its stdout and stderr to the CRI log file itself, waits for it and
// records how it ended in the attempt's state file, then exits. The
// container's parent-death signal ties it to its shim, not to the agent.
//
// Each attempt n of container c leaves two files in the pod's directory
// besides its log (c.n.log):
//
//	c.n.shim   the shim's spec, written by the agent before it starts the
//	           shim (an attempt is on record before anything runs), and
//	           flock'ed by the agent, then by the shim through the open file
//	           description it inherits: locked exactly while a shim of the
//	           attempt may still run the container
//	c.n.state  the shim's record: starting, running (pid, start time),
//	           exited (exit code or signal, finishedAt) or a start error;
//	           rewritten in place (one inode per attempt), so a reader may
//	           see it torn, which reads as "starting"
//
// A restarted agent classifies each container's last recorded attempt from
// these (runtime/process classifyAttempt) and adopts live shims, reports recorded ends, and
// counts an attempt that started but whose shim is gone without a record
// (a host reboot) as lost: a container is adopted or known dead, never
// started twice.
package shim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Arg0 is argv[0] of a shim; argv[1] is the path of its spec.
const Arg0 = "batchlet-shim"

// File descriptors a shim inherits besides stdin (the container's).
const (
	LockFD   = 3 // the attempt's spec file, locked for the shim's life
	StatusFD = 4 // the start's outcome, then closed
	TeeOutFD = 5 // copies of stdout for attach, while the agent reads
	TeeErrFD = 6 // copies of stderr
)

// Spec is what a shim runs: the container's command as the agent
// resolved it.
type Spec struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	WorkDir string   `json:"workDir"`
	// Init: Argv runs the container init (runtime/containerinit; Path,
	// the agent's binary) as PID 1 of new PID, mount and UTS namespaces
	// (InitCloneflags), which makes the container's mounts itself, takes
	// its user and capabilities, execs the command and reports a failure
	// to start it on its descriptor 3. WorkDir is then the container's,
	// seen from inside it. Without Init, Argv is the command itself, run
	// as Cred (nil: the shim's user) in a process group of its own.
	Init bool                `json:"init,omitempty"`
	Path string              `json:"path,omitempty"`
	Cred *syscall.Credential `json:"cred,omitempty"`
	// ImageID and ImageLayers (diff IDs) are the image an image container
	// runs, for the agent that adopts it.
	ImageID     string   `json:"imageID,omitempty"`
	ImageLayers []string `json:"imageLayers,omitempty"`
	CgroupDir   string   `json:"cgroupDir,omitempty"`
	LogPath     string   `json:"logPath"`
	Image       string   `json:"image"`
}

// InitCloneflags are the namespaces a container init starts in.
const InitCloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS

// Phases of a shim's state file.
const (
	PhaseStarting = "starting"
	PhaseRunning  = "running"
	PhaseExited   = "exited"
)

// State is an attempt's state file.
type State struct {
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
	if len(os.Args) != 2 {
		return
	}
	switch os.Args[0] {
	case Arg0:
		os.Exit(run(os.Args[1]))
	case SupervisorArg0:
		os.Exit(supervise(os.Args[1]))
	}
}

// run is the main of a shim of one container: it returns its exit code.
func run(specPath string) int {
	setName(Arg0)
	for fd := LockFD; fd <= TeeErrFD; fd++ {
		syscall.CloseOnExec(fd) // the container inherits none of them
	}
	files := attemptFiles{lock: os.NewFile(LockFD, specPath), status: os.NewFile(StatusFD, "status"),
		stdin: os.Stdin, teeOut: TeeOutFD, teeErr: TeeErrFD}
	pid := os.Getpid()
	return serve(specPath, files, pid, PidStartTime(pid), nil)
}

// attemptFiles are what the agent hands a shim (or the supervisor) for one
// attempt: the locked spec file, the status pipe, the container's stdin
// and the tee pipes' descriptors.
type attemptFiles struct {
	lock, status, stdin *os.File
	teeOut, teeErr      int
}

// serve starts the container of the attempt whose spec is specPath, waits
// for it and records how it ended; it returns the shim's exit code. The
// state records are stamped with shimPid and shimStart (zero under the
// supervisor, which must never be killed for one container). The lock is
// released, by closing files.lock, only once the end is on record. sp, when
// set (the supervisor's), starts the container; otherwise a thread of its
// own does.
func serve(specPath string, files attemptFiles, shimPid int, shimStart uint64, sp *spawner) int {
	defer files.lock.Close()
	status := files.status
	defer status.Close()
	// Once the pod's directory is removed (the pod deleted), later records
	// go nowhere instead of making files in a directory being removed
	// (stateFile.write).
	state, err := openState(strings.TrimSuffix(specPath, ".shim"))
	if err != nil {
		fmt.Fprint(status, err.Error())
		files.closeTees()
		return 1
	}
	defer state.close()
	state.shimPid, state.shimStart = shimPid, shimStart
	fail := func(err error) int {
		_ = state.write(State{Phase: PhaseExited, ExitCode: 128, StartError: err.Error(), FinishedAt: time.Now().UTC()})
		fmt.Fprint(status, err.Error())
		files.closeTees()
		return 1
	}
	b, err := io.ReadAll(io.NewSectionReader(files.lock, 0, 1<<30))
	if err != nil {
		return fail(fmt.Errorf("read shim spec: %w", err))
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail(fmt.Errorf("parse shim spec: %w", err))
	}
	if err := state.write(State{Phase: PhaseStarting}); err != nil {
		return fail(err)
	}
	sh, err := startShimmed(spec, files, sp)
	files.stdin.Close() // the container's now
	if err != nil {
		return fail(err)
	}
	st := State{Phase: PhaseRunning, Pid: sh.pid, PidStart: sh.pidStart, StartedAt: time.Now().UTC()}
	if err := state.write(st); err != nil {
		// The container runs; an adopting agent counts it as lost.
		fmt.Fprint(os.Stderr, err)
	}
	// Nothing more is written until the container ends: the file is
	// reopened then (stateFile.write), so that a running container costs
	// the supervisor one descriptor fewer, which every start copies.
	state.close()
	b, _ = json.Marshal(st)
	_, _ = status.Write(b)
	status.Close()
	<-sh.exited
	t := time.NewTimer(2 * time.Second)
	select {
	case <-sh.drained:
		t.Stop()
	case <-t.C: // a background child holds the pipe
	}
	st.Phase, st.FinishedAt = PhaseExited, time.Now().UTC()
	if sh.status != nil {
		st.ExitCode = sh.status.ExitStatus() // -1 when signalled, as os.ProcessState.ExitCode
		if sh.status.Signaled() {
			st.Signal = int(sh.status.Signal())
		}
	}
	if err := state.write(st); err != nil {
		fmt.Fprint(os.Stderr, err)
		return 1
	}
	return 0
}

// closeTees closes the tee descriptors when no container was started
// (a started one's output copy closes them once drained).
func (f attemptFiles) closeTees() {
	_ = syscall.Close(f.teeOut)
	_ = syscall.Close(f.teeErr)
}

// setName names the process (its comm, what ps and top show) whatever path
// it was exec'd by (the agent execs /proc/self/fd/N: see runtime/process).
func setName(name string) {
	b := append([]byte(name), 0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0)
}

// stateFile is a state file, created empty by openState and open (f) until
// close; shimPid and shimStart, when set, identify the shim that writes it.
// size is the length of its last record.
type stateFile struct {
	path      string
	f         *os.File
	shimPid   int
	shimStart uint64
	size      int
}

func openState(base string) (*stateFile, error) {
	path := base + ".state"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open shim state: %w", err)
	}
	return &stateFile{path: path, f: f}, nil
}

// close closes the file; a later write opens it again.
func (s *stateFile) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// write rewrites the state in place (see ReadState); a shim stamps it with
// its own pid and start time. The records of an attempt grow (starting,
// running, exited), so the file is truncated only after a shorter one: a
// truncation costs the file system far more than the write.
//
// A closed file is opened again, never created: once the attempt's
// directory is removed (the pod deleted) the record goes nowhere, as it did
// through a file kept open, instead of making files in a directory being
// removed.
func (s *stateFile) write(st State) error {
	st.ShimPid, st.ShimStart = s.shimPid, s.shimStart
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if s.f == nil {
		f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("write shim state: %w", err)
		}
		s.f = f
	}
	if _, err := s.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write shim state: %w", err)
	}
	if len(b) < s.size {
		if err := s.f.Truncate(int64(len(b))); err != nil {
			return fmt.Errorf("write shim state: %w", err)
		}
	}
	s.size = len(b)
	return nil
}

// shimmed is the container a shim started.
type shimmed struct {
	argv []string
	path string
	// status is how the container ended; nil when it could not be waited for.
	status   *syscall.WaitStatus
	pid      int
	pidStart uint64
	exited   chan struct{}
	drained  chan struct{}
}

// startShimmed starts the container of spec with its output going to the
// log file (and the tee descriptors), from sp's thread when set.
func startShimmed(spec Spec, files attemptFiles, sp *spawner) (*shimmed, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command")
	}
	if err := createLog(spec.LogPath); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	sh := &shimmed{argv: spec.Argv, path: spec.Argv[0], exited: make(chan struct{}), drained: make(chan struct{})}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if !spec.Init {
		attr.Credential = spec.Cred
	}
	if spec.CgroupDir != "" {
		if cg, err := os.Open(spec.CgroupDir); err == nil {
			defer cg.Close()
			attr.UseCgroupFD, attr.CgroupFD = true, int(cg.Fd())
		}
	}
	// Closed on failure: under the supervisor nothing ends with the attempt.
	var opened []*os.File
	closeOpened := func() {
		for _, o := range opened {
			o.Close()
		}
	}
	outR, outW, err := childPipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	opened = append(opened, outR, outW)
	errR, errW, err := childPipe()
	if err != nil {
		closeOpened()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	opened = append(opened, errR, errW)
	procAttr := &os.ProcAttr{Dir: spec.WorkDir, Env: dedupEnv(spec.Env), Files: []*os.File{files.stdin, outW, errW}, Sys: attr}
	var status *os.File
	if spec.Init {
		var w *os.File
		if status, w, err = childPipe(); err != nil {
			closeOpened()
			return nil, fmt.Errorf("pipe: %w", err)
		}
		defer status.Close()
		defer w.Close()
		sh.path, procAttr.Dir, procAttr.Files = spec.Path, "/", append(procAttr.Files, w)
		sh.argv, procAttr.Env = InitStart(sh.argv, procAttr.Env)
	}
	s := Starter{Attr: attr,
		Start: func() (err error) {
			if spec.Init {
				pid, ok, err := sp.startInit(sh.path, sh.argv, procAttr)
				runtime.KeepAlive(procAttr.Files)
				if ok {
					sh.pid = pid
					return err
				}
			}
			sh.pid, err = startProcess(sh.path, sh.argv, procAttr)
			return err
		},
		Wait: func() { sh.status = waitPid(sh.pid) }}
	resolve := func() error {
		path, err := LookPath(sh.argv[0], pathOf(spec.Env), spec.WorkDir)
		if err != nil {
			return fmt.Errorf("exec: %q: %w", sh.argv[0], err)
		}
		sh.path = path
		return nil
	}
	onStart := func() { sh.pidStart = PidStartTime(sh.pid) }
	if spec.Init {
		err = startInit(sp, s, status, procAttr.Files[3], onStart, sh.exited)
	} else {
		err = startPlain(sp, s, resolve, onStart, sh.exited)
	}
	outW.Close()
	errW.Close()
	if err != nil {
		closeOpened()
		return nil, err
	}
	tees := [2]*teeFD{{fd: files.teeOut}, {fd: files.teeErr}}
	for _, t := range tees {
		_ = syscall.SetNonblock(t.fd, true)
	}
	lf := &LogFile{Open: openLog(spec.LogPath), Now: time.Now, Tee: func(stream string, p []byte) {
		if stream == "stdout" {
			tees[0].write(p)
		} else {
			tees[1].write(p)
		}
	}}
	stdoutDone := make(chan struct{})
	go func() {
		lf.CopyLines("stdout", bufio.NewReaderSize(outR, MaxLogLine))
		outR.Close()
		close(stdoutDone)
	}()
	go func() {
		lf.CopyLines("stderr", bufio.NewReaderSize(errR, MaxLogLine))
		errR.Close()
		<-stdoutDone
		lf.Close()
		files.closeTees()
		close(sh.drained)
	}()
	return sh, nil
}

// startProcess is os.StartProcess without the pidfd Go opens for each child
// it starts (Linux 5.4 and later): the container is waited for by its pid
// (waitPid), which is not reused before that wait, so the descriptor buys
// nothing here, and each descriptor the supervisor holds while a container
// runs is copied into, then closed in, every container it starts. The
// descriptors, environment and error ("fork/exec <path>: <errno>") are
// os.StartProcess's.
func startProcess(path string, argv []string, attr *os.ProcAttr) (int, error) {
	env := attr.Env
	if env == nil {
		env = os.Environ()
	}
	files := make([]uintptr, len(attr.Files))
	for i, f := range attr.Files {
		files[i] = f.Fd() // blocking again, as os.StartProcess makes it
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: attr.Dir, Env: env, Files: files, Sys: attr.Sys})
	runtime.KeepAlive(attr.Files) // their finalizers must not close them before the start
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return pid, nil
}

// waitPid waits for child pid to end; nil when it cannot (it was never
// this process's child, or was already waited for).
func waitPid(pid int) *syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == nil {
			return &ws
		}
		if err != syscall.EINTR {
			return nil
		}
	}
}

// createLog makes the container's (empty) log file, there from the start
// for its readers. The container's output copy opens it only at its first
// entry (openLog): a container that writes nothing, or nothing yet, holds
// no descriptor of it in the supervisor, where every descriptor held is
// copied into, then closed in, each container it starts.
func createLog(path string) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	return syscall.Close(fd)
}

// openLog opens the log file createLog made, never creating it: once the
// pod's directory is removed (the pod deleted) the output goes nowhere, as
// it did through a file opened at the start, instead of making files in a
// directory being removed.
func openLog(path string) func() (*os.File, error) {
	return func() (*os.File, error) { return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) }
}

// childPipe is a pipe whose write end a child inherits: the read end is
// non-blocking, read through Go's poller, and the write end blocking and
// never registered with it (os.Pipe registers both, and the write end is
// set blocking again when handed to the child: system calls for nothing).
func childPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// dedupEnv keeps the last of each variable, as os/exec does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, len(env))
	n := len(env)
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		n--
		out[n] = env[i]
	}
	return out[n:]
}

// startPlain starts a process group of its own, waited for on a thread
// that lives as long as it does (its parent-death signal fires when the
// starting thread ends), or started from sp's thread when set.
func startPlain(sp *spawner, s Starter, resolve func() error, onStart func(), exited chan<- struct{}) error {
	if sp != nil {
		if err := resolve(); err != nil {
			return err
		}
		s.Attr.Setpgid = true
		return sp.start(s, onStart, exited)
	}
	started := make(chan error, 1)
	OnThreadOfItsOwn(func() {
		if err := resolve(); err != nil {
			started <- err
			return
		}
		s.Attr.Setpgid = true
		if err := s.Start(); err != nil {
			started <- err
			return
		}
		onStart()
		started <- nil
		s.Wait()
		close(exited)
	})
	return <-started
}

// StartInit starts a container init (runtime/containerinit) with s as
// PID 1 of new PID, mount and UTS namespaces (InitCloneflags), in a session
// of its own, waited for on a thread that lives as long as it does (its
// parent-death signal, SIGKILL, fires when that thread ends: once the
// container was waited for, or when its parent dies). The caller hands the
// init statusW as its descriptor 3 (containerinit.StatusFD). onStart, when
// set, runs on that thread right after the start, before the container can
// be reaped. StartInit returns once the init has exec'd the command (EOF on
// status, close-on-exec there), or with what the init wrote there when it
// could not, once it has exited.
func StartInit(s Starter, status, statusW *os.File, onStart func(), exited chan struct{}) error {
	return startInit(nil, s, status, statusW, onStart, exited)
}

// startInit is StartInit, started from sp's thread when set.
func startInit(sp *spawner, s Starter, status, statusW *os.File, onStart func(), exited chan struct{}) error {
	s.Attr.Cloneflags |= InitCloneflags
	s.Attr.Setsid = true
	s.Attr.Pdeathsig = syscall.SIGKILL
	var err error
	if sp != nil {
		err = sp.start(s, onStart, exited)
	} else {
		started := make(chan error, 1)
		OnThreadOfItsOwn(func() {
			if err := s.Start(); err != nil {
				started <- err
				return
			}
			if onStart != nil {
				onStart()
			}
			started <- nil
			s.Wait()
			close(exited)
		})
		err = <-started
	}
	statusW.Close()
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(status)
	if len(msg) > 0 {
		<-exited
		return errors.New(string(msg))
	}
	return nil
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
		n, err := syscall.Write(t.fd, p)
		if err != nil {
			t.dead = err != syscall.EAGAIN && err != syscall.EINTR
			return
		}
		p = p[n:]
	}
}

// WriteState writes the state file of the attempt whose files start with
// base (what an agent records of a container it starts itself).
func WriteState(base string, st State) error {
	s, err := openState(base)
	if err != nil {
		return err
	}
	defer s.f.Close()
	return s.write(st)
}

// ReadState reads an attempt's state file; nil when there is none. A state
// that does not parse (read while being rewritten, or torn by a crash) is
// "starting": the shim had begun, and how far it got is not known.
func ReadState(base string) (*State, error) {
	b, err := os.ReadFile(base + ".state")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shim state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil || st.Phase == "" {
		return &State{Phase: PhaseStarting}, nil
	}
	return &st, nil
}

// PidStartTime is field 22 of /proc/<pid>/stat (0 when gone).
func PidStartTime(pid int) uint64 {
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

// SameProcess reports whether pid still is the process that started at
// start (a PID is reused once its process is reaped).
func SameProcess(pid int, start uint64) bool {
	return pid > 0 && start != 0 && PidStartTime(pid) == start
}

// DefaultPath is the PATH a container gets when it sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// pathOf is the PATH of an environment ("K=V" entries), DefaultPath when
// it sets none.
func pathOf(env []string) string {
	path := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// LookPath finds file with the container's PATH, as execvp would; a name
// with a slash is taken relative to workDir.
func LookPath(file, path, workDir string) (string, error) {
	if strings.Contains(file, "/") {
		if !strings.HasPrefix(file, "/") {
			file = joinPath(workDir, file)
		}
		st, err := os.Stat(file)
		if err != nil {
			return "", errors.New("no such file or directory")
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", errors.New("permission denied")
		}
		return file, nil
	}
	if path == "" {
		return "", errors.New("executable file not found in $PATH")
	}
	for _, dir := range strings.Split(path, ":") {
		cand := joinPath(dir, file)
		if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", errors.New("executable file not found in $PATH")
}

// joinPath joins a directory (empty: the working directory) and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}
