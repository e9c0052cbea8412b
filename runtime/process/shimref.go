package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// recording an end (killed) left a container killed with it.
func (s *shimRef) result() (code int32, sig syscall.Signal, finished time.Time) {
	st, err := shim.ReadState(s.base)
	if err != nil || st == nil || st.Phase != shim.PhaseExited {
		return 0, syscall.SIGKILL, time.Time{}
	}
	return int32(st.ExitCode), syscall.Signal(st.Signal), st.FinishedAt
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
	lock, err := os.OpenFile(base+".shim", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fail(fmt.Errorf("write shim spec: %w", err))
	}
	defer lock.Close()
	// Taken before the shim exists and handed down to it: from now on the
	// lock is held for as long as this agent or the shim may still start
	// the container.
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(fmt.Errorf("lock attempt %s: %w", base, err))
	}
	if _, err := lock.Write(b); err != nil {
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
	cmd := &exec.Cmd{Path: p.rt.helper, Args: []string{shim.Arg0, base + ".shim"}, Dir: "/", Stdin: stdin.r,
		ExtraFiles:  []*os.File{lock, pipes.statusW, pipes.outW, pipes.errW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := p.rt.launchShim(cmd, []*os.File{lock, pipes.statusW, stdin.r, pipes.outW, pipes.errW}, pr.exited); err != nil {
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

// launchShim hands the attempt to the node's shim supervisor when it has
// one (files: the descriptors of cmd in the supervisor's order), else
// starts cmd, the attempt's own shim; exited is closed once the attempt's
// end is on record (or its shim is gone).
func (r *Runtime) launchShim(cmd *exec.Cmd, files []*os.File, exited chan<- struct{}) error {
	if r.supervisor != nil {
		err := r.supervisor.startContainer(cmd.Args[1], files, exited)
		if err == nil {
			return nil
		}
		r.log.Warn("the container gets a shim of its own: the shim supervisor failed", "err", err.Error())
	}
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

// shimPipes are the pipes between the agent and a shim it starts.
type shimPipes struct {
	statusR, statusW *os.File
	outR, outW       *os.File
	errR, errW       *os.File
}

func newShimPipes() (*shimPipes, error) {
	var s shimPipes
	var err error
	if s.statusR, s.statusW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		s.closeAll()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if s.errR, s.errW, err = os.Pipe(); err != nil {
		s.closeAll()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	return &s, nil
}

func (s *shimPipes) closeChildEnds() {
	for _, f := range []*os.File{s.statusW, s.outW, s.errW} {
		if f != nil {
			f.Close()
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
	done := make(chan struct{})
	copyTo := func(stream string, r *os.File) {
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
		done <- struct{}{}
	}
	go copyTo("stdout", s.outR)
	go copyTo("stderr", s.errR)
	<-done
	<-done
	close(pr.drained)
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
