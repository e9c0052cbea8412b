package scheduler

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// Rotation of the events broadcaster (see rotatingRecorder).
const (
	// eventsPerBroadcaster: events one broadcaster records before the
	// next one takes over.
	eventsPerBroadcaster = 4096
	// retiredGrace: how long a replaced broadcaster keeps taking the
	// events it was given before it shuts down and its goroutines stop:
	// client-go's recorder hands each event to its broadcaster from a
	// goroutine of its own, so one shut down at once would lose the last.
	retiredGrace = 10 * time.Second
)

// rotatingRecorder records events.k8s.io/v1 events, as kube-scheduler does,
// through client-go's broadcaster, replacing the broadcaster every
// eventsPerBroadcaster events. A broadcaster keeps every event it sent for
// six minutes, to fold isomorphic repeats into a series; a "Scheduled"
// event per pod is never repeated, so at thousands of pods/s that cache is
// the scheduler's largest memory and it follows the history, not the live
// pods. Replacing the broadcaster bounds it (to its events and those given
// to the replaced ones in the last retiredGrace); a repeat that straddles
// a replacement starts a new Event instead of counting in the old one's
// series.
type rotatingRecorder struct {
	client kubernetes.Interface
	clock  clock.Clock
	perGen int // events per broadcaster

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before start
	current *recorderGen
}

// recorderGen is one broadcaster and its recorder.
type recorderGen struct {
	b        events.EventBroadcaster
	rec      events.EventRecorder
	ctx      context.Context // ends when the broadcaster has stopped
	cancel   context.CancelFunc
	recorded int
}

func newRotatingRecorder(client kubernetes.Interface, clk clock.Clock) *rotatingRecorder {
	return &rotatingRecorder{client: client, clock: clk, perGen: eventsPerBroadcaster}
}

// start begins sending events to the API until ctx ends.
func (r *rotatingRecorder) start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctx = ctx
	g, err := r.newGen()
	if err != nil {
		return err
	}
	r.current = g
	return nil
}

func (r *rotatingRecorder) newGen() (*recorderGen, error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: r.client.EventsV1()})
	ctx, cancel := context.WithCancel(r.ctx)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, err
	}
	return &recorderGen{b: b, rec: b.NewRecorder(scheme.Scheme, Name), ctx: ctx, cancel: cancel}, nil
}

// shutdown stops the current broadcaster (Run's end).
func (r *rotatingRecorder) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		r.current.b.Shutdown()
		r.current.cancel()
		r.current = nil
	}
}

// Eventf implements events.EventRecorder: it records through the current
// broadcaster, first replacing one that has recorded its share. Before
// start and after shutdown the event is dropped, as an unstarted
// broadcaster would.
func (r *rotatingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.current
	if g == nil {
		return
	}
	if g.recorded >= r.perGen {
		if next, err := r.newGen(); err == nil {
			r.retire(g)
			r.current, g = next, next
		}
	}
	g.recorded++
	g.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// retire shuts g down after retiredGrace (its queued events are still
// sent); then its goroutines, and so its cache, go.
func (r *rotatingRecorder) retire(g *recorderGen) {
	t := r.clock.NewTimer(retiredGrace)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
		case <-r.ctx.Done():
		}
		g.b.Shutdown()
		g.cancel()
	}()
}
