package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/batchlet/batchlet/runtime/shim"
)

// shimRef is the agent's handle on the shim of one attempt.
type shimRef struct {
	// base is the common prefix of the attempt's files (attemptBase).
	base string
}

// result reads how the container ended from the state file: its exit
// code, or the signal that ended it, and when. A shim that ended without
// recording an end (killed) left a container killed with it, as did one
// whose state cannot be read or parsed (shim.ReadState's PhaseStarting).
func (s *shimRef) result() (code int32, sig syscall.Signal, finished time.Time) {
	b, err := readSmallFile(s.base + ".state")
	var st shim.State
	if err != nil || json.Unmarshal(b, &st) != nil || st.Phase != shim.PhaseExited {
		return 0, syscall.SIGKILL, time.Time{}
	}
	return int32(st.ExitCode), syscall.Signal(st.Signal), st.FinishedAt
}

// readSmallFile is os.ReadFile for a file of a few hundred bytes, read
// once per container: without os.Open's poller registration attempt (four
// fcntl and an epoll_ctl on a regular file) and its fstat for the size.
func readSmallFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// markTermByDefault records, before the runtime sends SIGKILL in place of
// a SIGTERM the container ignores as PID 1, that the container is to end
// as if by SIGTERM: an agent that adopts the shim later reads it.
func (s *shimRef) markTermByDefault() {
	_ = os.WriteFile(s.base+".sigterm", nil, 0o644)
}

func (s *shimRef) termByDefault() bool {
	_, err := os.Stat(s.base + ".sigterm")
	return err == nil
}

// waitUnlocked closes exited once no shim holds the attempt's lock.
func (s *shimRef) waitUnlocked(exited chan<- struct{}) {
	go func() {
		defer close(exited)
		f, err := os.Open(s.base + ".shim")
		if err != nil {
			return
		}
		defer f.Close()
		for {
			err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
}

// lockHeld reports whether a shim holds the attempt's lock (it runs).
func lockHeld(base string) bool {
	f, err := os.Open(base + ".shim")
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// shimSpecFor is the shim's spec for attempt n of c: the container init
// that runs argv in c's namespaces (and image), or, without namespaces,
// the command itself.
func (p *pod) shimSpecFor(c *ctr, n int, argv []string, env []envVar, workDir string, cg *containerCgroup) (shim.Spec, error) {
	spec := shim.Spec{Argv: argv, Env: environ(env), WorkDir: workDir,
		LogPath: p.logPath(c.spec.Name, n), Image: c.spec.Image}
	if cg != nil {
		spec.CgroupDir = cg.dir
	}
	if !p.rt.namespaces {
		if c.image != nil {
			return spec, errImagesNeedNamespaces
		}
		spec.Cred = credential(p.api, c.spec)
		return spec, nil
	}
	is, err := p.initSpec(c, argv, workDir)
	if err != nil {
		return spec, err
	}
	if spec.Argv, err = initArgv(is); err != nil {
		return spec, err
	}
	spec.Init, spec.Path = true, selfExe
	if c.image != nil {
		spec.ImageID = imageID(c.spec, c.image)
		for _, l := range c.image.img.Layers {
			spec.ImageLayers = append(spec.ImageLayers, l.String())
		}
	}
	return spec, nil
}

// startShim records attempt n of c and starts its shim, which starts the
// container; it returns once the container runs (or could not start),
// with the time the shim started it.
func (p *pod) startShim(c *ctr, n int, argv []string, env []envVar, workDir string) (*proc, time.Time, error) {
	base := p.attemptBase(c.spec.Name, n)
	pr := &proc{exited: make(chan struct{}), drained: make(chan struct{}), ns: p.rt.namespaces, shim: &shimRef{base: base},
		image: c.image != nil}
	cg, err := p.rt.cgroups.create(fmt.Sprintf("%s_%s_%d", p.api.UID, c.spec.Name, n), c.spec.Resources)
	if err != nil {
		p.rt.log.Info("container runs without limits", "namespace", p.api.Namespace, "name", p.api.Name, "container", c.spec.Name, "err", err.Error())
	}
	pr.cg = cg
	fail := func(err error) (*proc, time.Time, error) {
		pr.cg.remove()
		return nil, time.Time{}, err
	}
	spec, err := p.shimSpecFor(c, n, argv, env, workDir, cg)
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fail(err)
	}
	// The spec holds the container's environment (Secrets' values too).
	lock, err := openFile(base+".shim", unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o600)
	if err != nil {
		return fail(fmt.Errorf("write shim spec: %w", err))
	}
	defer unix.Close(lock)
	// Taken before the shim exists and handed down to it: from now on the
	// lock is held for as long as this agent or the shim may still start
	// the container.
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(fmt.Errorf("lock attempt %s: %w", base, err))
	}
	if err := writeAll(lock, b); err != nil {
		return fail(fmt.Errorf("write shim spec: %w", err))
	}
	pipes, err := newShimPipes()
	if err != nil {
		return fail(err)
	}
	defer pipes.closeParentEnds()
	stdin, err := p.rt.containerStdin(c)
	if err != nil {
		pipes.closeAll()
		return fail(err)
	}
	files := shimFiles{lock: lock, status: pipes.statusW, stdin: int(stdin.r.Fd()), out: pipes.outW, err: pipes.errW}
	if err := p.rt.launchShim(base+".shim", stdin.r, files, pr.exited); err != nil {
		pipes.closeAll()
		if stdin.pipe != nil {
			stdin.r.Close()
			stdin.pipe.close()
		}
		return fail(fmt.Errorf("start shim: %w", err))
	}
	if stdin.pipe != nil {
		stdin.r.Close()
	}
	pipes.closeChildEnds()
	msg, _ := io.ReadAll(pipes.statusR)
	var st shim.State
	if err := json.Unmarshal(msg, &st); err != nil || st.Phase != shim.PhaseRunning {
		<-pr.exited
		if stdin.pipe != nil {
			stdin.pipe.close()
		}
		if len(msg) == 0 {
			msg = []byte("the shim ended before starting the container")
		}
		return fail(errors.New(string(msg)))
	}
	pr.pid, pr.pidStart, pr.stdin = st.Pid, st.PidStart, stdin.pipe
	go pipes.tee(pr, &p.rt.teeBuffers)
	return pr, st.StartedAt, nil
}

// shimFiles are the descriptors a shim gets: the attempt's lock (its spec
// file, flock'ed), the status pipe, stdin, and the output copies for attach
// (stdout, stderr). The caller keeps them open until launchShim returns.
type shimFiles struct{ lock, status, stdin, out, err int }

// launchShim hands the attempt to the node's shim supervisor when it has
// one, else starts the attempt's own shim (stdin is files.stdin's File);
// exited is closed once the attempt's end is on record (or its shim is
// gone).
func (r *Runtime) launchShim(specPath string, stdin *os.File, files shimFiles, exited chan<- struct{}) error {
	if r.supervisor != nil {
		err := r.supervisor.startContainer(specPath, []int{files.lock, files.status, files.stdin, files.out, files.err}, exited)
		if err == nil {
			return nil
		}
		r.log.Warn("the container gets a shim of its own: the shim supervisor failed", "err", err.Error())
	}
	return r.startOwnShim(specPath, stdin, files, exited)
}

// startOwnShim starts the attempt's own shim process, which gets the lock,
// status and output descriptors as its files 3 to 6. exec.Cmd takes
// Files, so it is given duplicates (sharing the lock and the pipes),
// closed once it started.
func (r *Runtime) startOwnShim(specPath string, stdin *os.File, files shimFiles, exited chan<- struct{}) error {
	var extra []*os.File
	defer func() {
		for _, f := range extra {
			f.Close()
		}
	}()
	for _, fd := range []int{files.lock, files.status, files.out, files.err} {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("duplicate a shim descriptor: %w", err)
		}
		extra = append(extra, os.NewFile(uintptr(dup), "shim"))
	}
	cmd := &exec.Cmd{Path: r.helper, Args: []string{shim.Arg0, specPath}, Dir: "/", Stdin: stdin,
		ExtraFiles: extra, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	return r.startShimProcess(cmd, exited)
}

// startShimProcess starts a shim and has it waited for (while it is this
// agent's child), closing exited then.
func (r *Runtime) startShimProcess(cmd *exec.Cmd, exited chan<- struct{}) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// shimPipes are the pipes between the agent and a shim it starts. The
// agent's (read) ends are read through the runtime's poller; the shim's
// (write) ends are plain blocking descriptors never registered with it.
// os.Pipe registers both ends (an fcntl and an epoll_ctl each, another
// epoll_ctl at close), and File.Fd then made the shim's ends blocking
// again (another fcntl) before they were handed over: system calls for
// nothing on every container start. The shim gets blocking ends either way.
type shimPipes struct {
	statusR, outR, errR *os.File
	// statusW, outW and errW are -1 once closed.
	statusW, outW, errW int
}

func newShimPipes() (*shimPipes, error) {
	s := shimPipes{statusW: -1, outW: -1, errW: -1}
	var err error
	if s.statusR, s.statusW, err = childPipe(); err != nil {
		return nil, err
	}
	if s.outR, s.outW, err = childPipe(); err != nil {
		s.closeAll()
		s.closeParentEnds()
		return nil, err
	}
	if s.errR, s.errW, err = childPipe(); err != nil {
		s.closeAll()
		s.closeParentEnds()
		return nil, err
	}
	return &s, nil
}

// childPipe is a pipe whose read end, non-blocking, is read through the
// poller and whose write end, blocking, goes to a shim. A new pipe's ends
// have no status flags but their access mode, so O_NONBLOCK is set without
// reading them first.
func childPipe() (r *os.File, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, os.NewSyscallError("pipe2", err)
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), p[1], nil
}

func (s *shimPipes) closeChildEnds() {
	for _, fd := range []*int{&s.statusW, &s.outW, &s.errW} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (s *shimPipes) closeParentEnds() {
	if s.statusR != nil {
		s.statusR.Close()
	}
}

func (s *shimPipes) closeAll() {
	s.closeChildEnds()
	for _, f := range []*os.File{s.outR, s.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// teeBufferSize is the largest chunk of output one read of a tee takes.
const teeBufferSize = 32 * 1024

// teeBufferPool holds the tees' read buffers. Most containers write
// nothing their tees read, yet each tee needs its buffer while it waits:
// allocating them per container made a fifth of the bytes the agent
// allocated on `batchlet bench process` (GC work).
type teeBufferPool struct{ pool sync.Pool }

func (b *teeBufferPool) get() *[teeBufferSize]byte {
	if buf, ok := b.pool.Get().(*[teeBufferSize]byte); ok {
		return buf
	}
	return new([teeBufferSize]byte)
}

func (b *teeBufferPool) put(buf *[teeBufferSize]byte) { b.pool.Put(buf) }

// tee hands the output copies the shim sends to the attached sessions
// until the shim closes them; then pr.drained is closed. The taps copy
// what they are given (io.Writer), so the buffers go back to bufs.
func (s *shimPipes) tee(pr *proc, bufs *teeBufferPool) {
	stderrDone := make(chan struct{})
	go func() {
		copyTee(pr, "stderr", s.errR, bufs)
		close(stderrDone)
	}()
	copyTee(pr, "stdout", s.outR, bufs)
	<-stderrDone
	close(pr.drained)
}

// copyTee hands what r gives to pr's taps as stream until r ends, then
// closes r.
func copyTee(pr *proc, stream string, r *os.File, bufs *teeBufferPool) {
	buf := bufs.get()
	defer bufs.put(buf)
	for {
		n, err := r.Read(buf[:])
		if n > 0 {
			pr.taps.write(stream, buf[:n])
		}
		if err != nil {
			break
		}
	}
	r.Close()
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
