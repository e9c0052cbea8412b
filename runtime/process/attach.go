package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

var _ runtime.Attacher = (*Runtime)(nil)

// tap receives a running container's output while someone is attached.
type tap struct {
	stdout, stderr io.Writer
}

// taps fans a container's output out to its attached sessions.
type taps struct {
	mu  sync.Mutex
	set map[*tap]struct{}
}

func (t *taps) add(x *tap) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		t.set = map[*tap]struct{}{}
	}
	t.set[x] = struct{}{}
}

func (t *taps) remove(x *tap) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.set, x)
}

// write copies one chunk of stream ("stdout" or "stderr") to every tap.
func (t *taps) write(stream string, p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for x := range t.set {
		w := x.stdout
		if stream == "stderr" {
			w = x.stderr
		}
		if w != nil {
			_, _ = w.Write(p)
			flush(w)
		}
	}
}

// stdinPipe is the write end of a container's stdin (spec.stdin).
type stdinPipe struct {
	mu     sync.Mutex
	w      *os.File
	once   bool // stdinOnce: close after the first attached stdin ends
	closed bool
}

func (s *stdinPipe) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = s.w.Close()
	}
}

// feed copies in to the container's stdin; with stdinOnce the stdin closes
// when in ends.
func (s *stdinPipe) feed(in io.Reader) {
	_, _ = io.Copy(s.w, in)
	if s.once {
		s.close()
	}
}

// Attach implements runtime.Attacher.
func (r *Runtime) Attach(ctx context.Context, uid types.UID, container string, s runtime.ExecStreams) error {
	p, ok := r.get(uid)
	if !ok {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	p.mu.Lock()
	c, ok := p.find(container)
	var pr *proc
	if ok {
		pr = c.proc
	}
	p.mu.Unlock()
	if !ok {
		return runtime.NotFoundf("container %s is not valid for pod %s", container, p.api.Name)
	}
	if pr == nil {
		return fmt.Errorf("container %q in pod %q is not running", container, p.api.Name)
	}
	x := &tap{stdout: s.Stdout, stderr: s.Stderr}
	if s.TTY {
		x.stderr = s.Stdout
	}
	pr.taps.add(x)
	defer pr.taps.remove(x)
	if s.Stdin != nil && pr.stdin != nil {
		go pr.stdin.feed(s.Stdin)
	}
	select {
	case <-pr.exited:
		waitDrain(pr, 2*time.Second)
	case <-ctx.Done():
	}
	return nil
}

// waitDrain waits (up to d) for the container's output to be copied.
func waitDrain(pr *proc, d time.Duration) {
	select {
	case <-pr.drained: // the usual case: no timer needed
		return
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-pr.drained:
	case <-t.C:
	}
}
