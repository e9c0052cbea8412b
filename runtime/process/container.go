package process

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// ctr is one container of a pod; st is guarded by the pod's mutex.
type ctr struct {
	spec        *corev1.Container
	init        bool
	st          corev1.ContainerStatus
	env         []envVar
	workDir     string
	proc        *proc
	lastAttempt int // -1 before the first log file exists
	backoff     time.Duration
	// first is the number of the first attempt this runtime makes (the
	// restartCount the pod resumed from); done: the container ran to its
	// end before the pod was resumed and is not run again.
	first int
	done  bool
	// image is the image the current attempt runs in (image runtime).
	image *containerImage
	// adopt is the attempt of an earlier agent process the container goes
	// on from (Runtime.Adopt), until runContainer takes it.
	adopt *adoption
}

func newCtr(spec *corev1.Container, init bool, waitingReason string) *ctr {
	return &ctr{spec: spec, init: init, lastAttempt: -1, st: corev1.ContainerStatus{
		Name:    spec.Name,
		Image:   spec.Image,
		Started: ptrBool(false),
		State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waitingReason}},
	}}
}

// resumeFrom goes on from the container's status in list, when there is
// one (see runtime.Runtime.StartPod).
func (c *ctr) resumeFrom(list []corev1.ContainerStatus) {
	var prev *corev1.ContainerStatus
	for i := range list {
		if list[i].Name == c.spec.Name {
			prev = list[i].DeepCopy()
		}
	}
	if prev == nil {
		return
	}
	n := int(prev.RestartCount)
	c.st.RestartCount = prev.RestartCount
	c.st.LastTerminationState = prev.LastTerminationState
	switch {
	case prev.State.Terminated != nil:
		c.st.State, c.st.ContainerID, c.st.ImageID = prev.State, prev.ContainerID, prev.ImageID
		c.done, c.lastAttempt = true, n
	case prev.State.Running != nil:
		// Attempt n ran; the next one must not reuse its number.
		c.first, c.lastAttempt = n+1, n
	default:
		if prev.State.Waiting != nil {
			c.st.State = prev.State
		}
		c.first, c.lastAttempt = n, n-1
	}
}

// exitCode is the exit code of a container that is done.
func (c *ctr) exitCode() int32 {
	if t := c.st.State.Terminated; t != nil {
		return t.ExitCode
	}
	return 0
}

// attempt runs attempt n of c to its end and returns the exit code and how
// long it ran; ok is false when the pod was killed before c could start.
func (p *pod) attempt(c *ctr, n int) (code int32, ran time.Duration, ok bool) {
	var img *containerImage
	if p.runsImages() {
		if img, ok = p.ensureImage(c, n); !ok {
			return 0, 0, false
		}
	}
	env, ok := p.resolveEnv(c, img)
	if !ok {
		return 0, 0, false
	}
	argv := expandAll(append(append([]string{}, c.spec.Command...), c.spec.Args...), env)
	workDir := c.spec.WorkingDir
	if img != nil {
		argv, env, workDir = imageCommand(c.spec, img.img.Config.Config, expandAll(c.spec.Command, env), expandAll(c.spec.Args, env), env)
	} else if workDir == "" {
		workDir = filepath.Join(p.dir, "work")
		if p.rt.namespaces {
			workDir = containerinit.InPod(workDir)
		}
	}
	p.mu.Lock()
	if p.killed {
		p.mu.Unlock()
		return 0, 0, false
	}
	c.env, c.workDir, c.image = env, workDir, img
	if n > 0 {
		if c.st.State.Terminated != nil {
			c.st.LastTerminationState = c.st.State
		}
		c.st.RestartCount = int32(n)
	}
	p.mu.Unlock()

	logPath, err := p.createLog(c, n)
	if err != nil {
		return p.startError(c, n, err.Error()), 0, true
	}
	if len(argv) == 0 && img != nil {
		return p.startError(c, n, fmt.Sprintf("failed to start container %q: no command specified: the image has neither Entrypoint nor Cmd", c.spec.Name)), 0, true
	}
	if len(argv) == 0 {
		return p.startError(c, n, fmt.Sprintf("failed to start container %q: no command: batchlet runs the container's command on the host and does not pull image %q", c.spec.Name, c.spec.Image)), 0, true
	}
	if img == nil { // the image runtime reported its pull
		p.rt.event(p.api, c.spec, c.init, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.spec.Image))
	}
	p.rt.event(p.api, c.spec, c.init, corev1.EventTypeNormal, "Created", fmt.Sprintf("Created container: %s", c.spec.Name))
	var pr *proc
	started := now(p)
	if p.rt.cfg.NoShims {
		// The container dies with this agent: on record as started, a
		// restarted agent counts it as lost instead of running it again.
		_ = shim.WriteState(p.attemptBase(c.spec.Name, n), shim.State{Phase: shim.PhaseStarting})
		var logFile *os.File
		if logFile, err = os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			pr, err = p.startProcess(c, n, argv, env, workDir, logFile)
		}
	} else {
		var startedAt time.Time
		pr, startedAt, err = p.startShim(c, n, argv, env, workDir)
		started = metav1.NewTime(startedAt.Truncate(time.Second))
	}
	if err != nil {
		return p.startError(c, n, fmt.Sprintf("failed to start container process: %v", err)), 0, true
	}
	id := containerID(p, c, n)
	p.mu.Lock()
	c.proc = pr
	c.st.ContainerID, c.st.ImageID = id, imageID(c.spec, img)
	c.st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	c.st.Started = ptrBool(true)
	killedMeanwhile := p.killed
	p.mu.Unlock()
	if killedMeanwhile {
		pr.signal(false)
	}
	p.rt.event(p.api, c.spec, c.init, corev1.EventTypeNormal, "Started", fmt.Sprintf("Started container %s", c.spec.Name))
	p.notify()
	code, ran = p.await(c, pr, started, id, logPath)
	return code, ran, true
}

// await waits for the running attempt pr of c to end and records how it
// ended; it returns the exit code and how long the attempt ran.
func (p *pod) await(c *ctr, pr *proc, started metav1.Time, id, logPath string) (int32, time.Duration) {
	code, oom, finishedAt := pr.wait()
	finished := now(p)
	if !finishedAt.IsZero() {
		finished = metav1.NewTime(finishedAt.Truncate(time.Second))
	}
	term := &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: started, FinishedAt: finished, ContainerID: id}
	switch {
	case oom:
		term.Reason = "OOMKilled"
	case code == 0:
		term.Reason = "Completed"
	default:
		term.Reason = "Error"
	}
	if code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		term.Message = lastLines(logPath, 80, 2048)
	}
	p.mu.Lock()
	c.proc = nil
	c.st.State = corev1.ContainerState{Terminated: term}
	c.st.Ready = false
	c.st.Started = ptrBool(false)
	p.mu.Unlock()
	p.notify()
	return code, finished.Sub(started.Time)
}

// resolveEnv builds c's environment, waiting CreateContainerConfigError
// while a referenced ConfigMap or Secret is missing, or while a container
// that must not run as root would (or, in img, might).
func (p *pod) resolveEnv(c *ctr, img *containerImage) ([]envVar, bool) {
	for {
		env, err := buildEnv(context.Background(), p.api, c.spec, p.res, p.hostname)
		if err == nil {
			err = p.verifyRunAsNonRoot(c, img)
		}
		if err == nil {
			return env, true
		}
		p.mu.Lock()
		if c.st.State.Terminated != nil {
			c.st.LastTerminationState = c.st.State
		}
		c.st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}}
		p.mu.Unlock()
		p.rt.event(p.api, c.spec, c.init, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		p.notify()
		if !p.sleep(setupRetry) {
			return nil, false
		}
	}
}

// startError records an attempt that could not start, as containerd
// reports it: terminated, exit code 128, reason StartError.
func (p *pod) startError(c *ctr, n int, msg string) int32 {
	t := now(p)
	p.mu.Lock()
	c.st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 128, Reason: "StartError", Message: msg,
		StartedAt: metav1.NewTime(time.Unix(0, 0).UTC()), FinishedAt: t,
		ContainerID: containerID(p, c, n),
	}}
	c.st.ContainerID = containerID(p, c, n)
	p.mu.Unlock()
	p.rt.event(p.api, c.spec, c.init, corev1.EventTypeWarning, "Failed", "Error: "+msg)
	p.notify()
	return 128
}

func containerID(p *pod, c *ctr, n int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", p.api.UID, c.spec.Name, n)))
	return fmt.Sprintf("batchlet://%x", sum)
}

// createLog creates (or empties) the log file of attempt n: one inode
// per attempt, there for the log's readers before the container starts.
// It is not kept open (the shim opens it for the container's output), so
// it is made without os.OpenFile's poller registration (see fileWriter).
func (p *pod) createLog(c *ctr, n int) (string, error) {
	path := p.logPath(c.spec.Name, n)
	fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("create log: %w", err)
	}
	_ = unix.Close(fd)
	p.mu.Lock()
	c.lastAttempt = n
	p.mu.Unlock()
	return path, nil
}

// lookPath finds file with the container's PATH, as execvp would.
func lookPath(file string, env []envVar, workDir string) (string, error) {
	path := defaultPath
	for _, e := range env {
		if e.name == "PATH" {
			path = e.value
		}
	}
	return shim.LookPath(file, path, workDir)
}

// proc is a running container process: one a shim owns (shim set), or
// one the agent started itself (cmd set; the image runtime).
type proc struct {
	// pid is the container's process, which pidStart (its start time)
	// identifies for shim containers: PIDs are reused.
	pid      int
	pidStart uint64
	cmd      *exec.Cmd
	shim     *shimRef
	// ns: the container is PID 1 of its own namespaces.
	ns bool
	cg *containerCgroup
	// drained is closed once stdout and stderr reached EOF (for a shim
	// container: the copies it sends the agent).
	drained chan struct{}
	exited  chan struct{} // closed once the container (or its shim) ended
	// termByDefault: SIGKILL stood in for a SIGTERM that PID 1 would have
	// ignored (see signal); the container then ended as if by SIGTERM.
	termByDefault atomic.Bool
	// taps receive the output while someone is attached.
	taps taps
	// stdin is the container's stdin when its spec asks for one.
	stdin *stdinPipe
	// image: the container runs its image's command, whose handling of
	// SIGTERM as PID 1 is its own (no SIGKILL stands in for it).
	image bool
}

// startProcess starts argv with stdout and stderr going to the log file f,
// which it closes.
func (p *pod) startProcess(c *ctr, n int, argv []string, env []envVar, workDir string, f *os.File) (*proc, error) {
	pr := &proc{exited: make(chan struct{}), drained: make(chan struct{}), ns: p.rt.namespaces}
	lf := &shim.LogFile{F: f, Now: p.rt.clock.Now, Tee: pr.taps.write}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: environ(env), Dir: workDir, SysProcAttr: &syscall.SysProcAttr{}}
	cgf := p.containerCgroup(c, n, pr)
	if cgf != nil {
		defer cgf.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cgf.Fd())
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		f.Close()
		pr.cg.remove()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		f.Close()
		pr.cg.remove()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	stdin, err := p.rt.containerStdin(c)
	if err != nil {
		pr.cg.remove()
		f.Close()
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	cmd.Stdin = stdin.r
	pr.cmd = cmd
	err = p.launch(pr, c, env)
	if err == nil {
		pr.pid = cmd.Process.Pid
	}
	outW.Close()
	errW.Close()
	if stdin.pipe != nil {
		stdin.r.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		f.Close()
		pr.cg.remove()
		if stdin.pipe != nil {
			stdin.pipe.close()
		}
		return nil, err
	}
	pr.stdin = stdin.pipe
	stdoutDone := make(chan struct{})
	go func() {
		p.rt.copyStream(lf, "stdout", outR)
		outR.Close()
		close(stdoutDone)
	}()
	go func() {
		p.rt.copyStream(lf, "stderr", errR)
		errR.Close()
		<-stdoutDone
		f.Close()
		close(pr.drained)
	}()
	return pr, nil
}

// containerCgroup creates attempt n's cgroup when c has limits and returns
// it opened for CgroupFD (nil without one); pr.cg is set on success.
func (p *pod) containerCgroup(c *ctr, n int, pr *proc) *os.File {
	cg, err := p.rt.cgroups.create(fmt.Sprintf("%s_%s_%d", p.api.UID, c.spec.Name, n), c.spec.Resources)
	if err != nil {
		p.rt.log.Info("container runs without limits", "namespace", p.api.Namespace, "name", p.api.Name, "container", c.spec.Name, "err", err.Error())
	}
	if cg == nil {
		return nil
	}
	f, err := cg.open()
	if err != nil {
		cg.remove()
		return nil
	}
	pr.cg = cg
	return f
}

// launch starts pr.cmd without a shim (Config.NoShims) and has it waited
// for, closing pr.exited then: with namespaces, the container init runs it
// (see startInit), as a shim does; without, a plain process group.
func (p *pod) launch(pr *proc, c *ctr, env []envVar) error {
	cmd := pr.cmd
	pr.image = c.image != nil
	if pr.ns {
		spec, err := p.initSpec(c, cmd.Args, cmd.Dir)
		if err != nil {
			return err
		}
		return startInit(cmd, p.rt.helper, spec, pr.exited)
	}
	if c.image != nil {
		return errImagesNeedNamespaces
	}
	path, err := lookPath(cmd.Args[0], env, cmd.Dir)
	if err != nil {
		return fmt.Errorf("exec: %q: %w", cmd.Args[0], err)
	}
	cmd.Path = path
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Credential = credential(p.api, c.spec)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait(); close(pr.exited) }()
	return nil
}

// cmdStarter starts and waits for cmd (see shim.StartInit).
func cmdStarter(cmd *exec.Cmd) shim.Starter {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return shim.Starter{Attr: cmd.SysProcAttr, Start: cmd.Start, Wait: func() { _ = cmd.Wait() }}
}

// stdinSource is what a container process reads as stdin: the runtime's
// /dev/null, or a pipe fed by attach when the spec asks for stdin.
type stdinSource struct {
	r    *os.File
	pipe *stdinPipe
}

func (r *Runtime) containerStdin(c *ctr) (stdinSource, error) {
	if !c.spec.Stdin {
		return stdinSource{r: r.devNull}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return stdinSource{}, fmt.Errorf("stdin pipe: %w", err)
	}
	return stdinSource{r: pr, pipe: &stdinPipe{w: pw, once: c.spec.StdinOnce}}, nil
}

// mounts lists c's volumeMounts as bind mounts.
func (p *pod) mounts(c *ctr) []containerinit.Mount {
	var out []containerinit.Mount
	for _, vm := range c.spec.VolumeMounts {
		src, ok := p.volumes[vm.Name]
		if !ok {
			continue
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, vm.SubPath)
		}
		out = append(out, containerinit.Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	return out
}

// wait waits for the process and its output; the code is 128+signal when
// it was killed by a signal. finished is when a shim saw the container end
// (zero for others: now).
func (pr *proc) wait() (code int32, oom bool, finished time.Time) {
	<-pr.exited
	if pr.stdin != nil {
		pr.stdin.close()
	}
	waitDrain(pr, 2*time.Second) // a background child may hold the pipe
	var sig syscall.Signal
	if pr.shim != nil {
		code, sig, finished = pr.shim.result()
		if sig == syscall.SIGKILL && pr.shim.termByDefault() {
			pr.termByDefault.Store(true)
		}
	} else {
		code = int32(pr.cmd.ProcessState.ExitCode())
		if ws, ok := pr.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
		}
	}
	if sig != 0 {
		code = 128 + int32(sig)
		if sig == syscall.SIGKILL && pr.termByDefault.Load() {
			code = 128 + int32(syscall.SIGTERM)
		}
	}
	oom = pr.cg.oomKilled()
	pr.cg.remove()
	return code, oom, finished
}

// signal sends SIGTERM (or SIGKILL when force) to the container's process
// group. SIGKILL to a namespaced container, PID 1 of its PID namespace,
// ends every process of that namespace.
func (pr *proc) signal(force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	select {
	case <-pr.exited:
		return
	default:
	}
	if pr.shim != nil && !shim.SameProcess(pr.pid, pr.pidStart) {
		return // ended; its shim is recording that
	}
	pid := pr.pid
	if err := syscall.Kill(-pid, sig); err != nil || force {
		// The process itself: it may have left its group.
		pr.signalProcess(sig)
	}
	if !force && pr.ns && !pr.image && shim.SigtermIsDefault(pid) {
		// The kernel drops a SIGTERM that PID 1 has no handler for, where
		// any other process dies of it. Stopping a container has always
		// had that effect here (a shell, sleep or python that sets no
		// trap stops at once), so give it the SIGTERM's default action.
		pr.termByDefault.Store(true)
		if pr.shim != nil {
			pr.shim.markTermByDefault()
		}
		pr.signalProcess(syscall.SIGKILL)
	}
}

// signalProcess signals the container process itself: through its pidfd
// when the agent started it, which never reaches a reused PID; after a
// check of its start time otherwise.
func (pr *proc) signalProcess(sig syscall.Signal) {
	if pr.cmd != nil {
		_ = pr.cmd.Process.Signal(sig)
		return
	}
	if shim.SameProcess(pr.pid, pr.pidStart) {
		_ = syscall.Kill(pr.pid, sig)
	}
}

// logs writes the log of container name.
func (p *pod) logs(ctx context.Context, name string, opts runtime.LogOptions, w io.Writer) error {
	p.mu.Lock()
	c, ok := p.find(name)
	if !ok {
		p.mu.Unlock()
		return runtime.NotFoundf("container %s is not valid for pod %s", name, p.api.Name)
	}
	n := c.lastAttempt
	reason := ""
	if c.st.State.Waiting != nil {
		reason = c.st.State.Waiting.Reason
	}
	p.mu.Unlock()
	if opts.Previous {
		if n < 1 {
			return runtime.NotFoundf("previous terminated container %q in pod %q not found", name, p.api.Name)
		}
		n--
		opts.Follow = false
	}
	path, ok, empty := "", false, false
	if n >= 0 {
		path, ok, empty = p.findLog(name, n)
	}
	if opts.Previous && !ok {
		return runtime.NotFoundf("previous terminated container %q in pod %q not found", name, p.api.Name)
	}
	if n < 0 || (reason != "" && !ok) {
		return fmt.Errorf("container %q in pod %q is waiting to start: %s", name, p.api.Name, reason)
	}
	if !ok {
		path = p.logPath(name, n)
	}
	if empty && !opts.Follow {
		// Most containers of a batch write nothing: their results' log
		// tails need no open of the file (readLog's).
		return nil
	}
	finished := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return c.lastAttempt != n || c.proc == nil
	}
	return readLog(ctx, path, opts, finished, w)
}

// logPath is where attempt n of a container writes its log:
// <pod dir>/<container>.<attempt>.log, in the pod's directory itself so
// that a log costs no directory of its own (container names have no dots,
// the pod directory's other entries none either).
func (p *pod) logPath(container string, attempt int) string {
	return filepath.Join(p.dir, container+"."+strconv.Itoa(attempt)+".log")
}

// oldLogPath is where runtimes before logPath's layout wrote the log of an
// attempt; a pod resumed from such a data dir still shows those.
func (p *pod) oldLogPath(container string, attempt int) string {
	return filepath.Join(p.dir, "logs", container, strconv.Itoa(attempt)+".log")
}

// findLog returns the path of an attempt's log on disk, in either layout,
// and whether it was empty then; false when there is none (those of a
// resumed pod's earlier attempts may not have survived).
func (p *pod) findLog(container string, attempt int) (path string, ok, empty bool) {
	for _, path := range []string{p.logPath(container, attempt), p.oldLogPath(container, attempt)} {
		if st, err := os.Stat(path); err == nil {
			return path, true, st.Size() == 0
		}
	}
	return "", false, false
}

// exec runs argv in a running container with its environment and working
// directory; in a namespaced container through the container init's exec
// mode, which joins the container's namespaces and cgroup and takes its
// user, groups and capabilities, as runc exec does.
func (p *pod) exec(ctx context.Context, name string, argv []string, s runtime.ExecStreams) error {
	p.mu.Lock()
	c, ok := p.find(name)
	var pr *proc
	var env []envVar
	var workDir string
	if ok {
		pr, env, workDir = c.proc, c.env, c.workDir
	}
	p.mu.Unlock()
	if !ok || pr == nil {
		return fmt.Errorf("container not found (%q): %w", name, runtime.ErrNotFound)
	}
	if len(argv) == 0 {
		return fmt.Errorf("exec: no command")
	}
	var cmd *exec.Cmd
	var status *os.File
	if pr.ns {
		var err error
		if cmd, status, err = p.execInit(ctx, c, pr, argv, workDir, s.TTY); err != nil {
			return err
		}
		defer status.Close()
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = workDir
	}
	cmd.Env = environ(env)
	ptmx := hostPTMX
	if pr.ns {
		ptmx = containerPTMX(pr.pid)
	}
	err := runExecCmd(cmd, s, ptmx, status)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &runtime.ExitError{Code: code}
	}
	var startErr execStartError
	if err != nil && !errors.As(err, &startErr) {
		return fmt.Errorf("exec in container %s: %w", name, err)
	}
	return err
}

// execInit is the container init in exec mode running argv in c, whose
// PID 1 is pr, and the read end of its status pipe.
func (p *pod) execInit(ctx context.Context, c *ctr, pr *proc, argv []string, workDir string, tty bool) (*exec.Cmd, *os.File, error) {
	args, err := initArgvAs(containerinit.ExecArg0, p.execSpec(c, pr, argv, workDir, tty))
	if err != nil {
		return nil, nil, err
	}
	status, statusW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("status pipe: %w", err)
	}
	cmd := exec.CommandContext(ctx, selfExe)
	cmd.Args, cmd.Dir = args, "/"
	cmd.ExtraFiles = []*os.File{statusW} // containerinit.StatusFD
	// The init kills the command on SIGTERM (SIGKILL would leave it
	// running: it is the init's child in another PID namespace).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	return cmd, status, nil
}

// execStartError is why an exec's command could not start, in the words
// of containerd and runc.
type execStartError string

func (e execStartError) Error() string {
	return "failed to exec in container: OCI runtime exec failed: exec failed: unable to start container process: " + string(e)
}

// runExecCmd runs cmd wired to the exec streams (on a pseudo-terminal when
// they ask for one) and waits for it. With status (the container init's),
// what the init reports there is why the command could not start. ptmx
// makes the terminal (the container's devpts instance in exec mode).
func runExecCmd(cmd *exec.Cmd, s runtime.ExecStreams, ptmx string, status *os.File) error {
	var wait func() error
	var err error
	if s.TTY {
		// In exec mode the command takes the terminal itself, in a session
		// of its own: the init must not hold it.
		wait, err = startWithTTY(cmd, s, ptmx, status == nil)
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
		if err = cmd.Start(); err == nil {
			wait = cmd.Wait
		}
	}
	if status != nil {
		cmd.ExtraFiles[0].Close()
	}
	if err != nil {
		return err
	}
	if status != nil {
		if msg, _ := io.ReadAll(status); len(msg) > 0 {
			_ = wait()
			return execStartError(msg)
		}
	}
	return wait()
}
