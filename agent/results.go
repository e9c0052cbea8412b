package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
)

// ResultsConfig makes the agent keep a ContainerResult of every container
// attempt that terminates (see package results).
type ResultsConfig struct {
	// Writer writes the results (results.NewWriter); nil keeps none.
	Writer results.Writer
	// LogTailBytes of each attempt's log are kept; default
	// results.DefaultLogTailBytes, negative keeps no log.
	LogTailBytes int
}

// Bounds of the result queue (see resultQueue).
const (
	resultQueueSize    = 1024
	resultWriters      = 4
	resultWriteTimeout = 30 * time.Second
	// resultDrainTimeout bounds how long a stopping agent keeps writing
	// the results still queued; past it the writes fail fast and are
	// logged.
	resultDrainTimeout = 10 * time.Second
)

// recordResults queues the result of each terminated attempt status shows
// that this process has not recorded yet. The log tail is read here, while
// the runtime surely still has the attempt's log; the create is left to the
// result queue, so it never delays the pod's next sync. Creates are
// idempotent by name (an agent restart or a retry finds them
// AlreadyExists); a failure is logged and not retried, as results are best
// effort and must not hold the pod's status back.
func (a *Agent) recordResults(ctx context.Context, pod *corev1.Pod, st *podState, status *corev1.PodStatus) {
	if a.results == nil {
		return
	}
	for _, at := range results.Terminated(status) {
		if st.recorded[at.Key()] {
			continue
		}
		if st.recorded == nil {
			st.recorded = map[string]bool{}
		}
		st.recorded[at.Key()] = true
		tail, truncated := a.logTail(ctx, pod, at)
		a.results.add(results.New(pod, at, tail, truncated))
	}
}

// logTail reads the end of the attempt's log from the runtime; a log that
// cannot be read leaves the tail empty.
func (a *Agent) logTail(ctx context.Context, pod *corev1.Pod, at results.Attempt) (string, bool) {
	limit := a.cfg.Results.LogTailBytes
	if limit < 0 {
		return "", false
	}
	buf := &results.TailBuffer{Max: limit}
	if err := a.cfg.Runtime.Logs(ctx, pod.UID, at.Container, runtime.LogOptions{Previous: at.Previous}, buf); err != nil {
		a.log.Debug("read log for container result", "namespace", pod.Namespace, "name", pod.Name, "container", at.Container, "err", err.Error())
	}
	return buf.Tail()
}

// resultQueue creates ContainerResults off the pods' sync path: a bounded
// queue served by a few writers. A full queue makes add wait (nothing is
// dropped); close writes what is queued before it returns.
type resultQueue struct {
	writer results.Writer
	log    *slog.Logger
	clock  clock.Clock
	ch     chan *results.ContainerResult
	wg     sync.WaitGroup
	// ctx is the writers' context, cancelled when draining takes too long.
	ctx    context.Context
	cancel context.CancelFunc
}

func newResultQueue(w results.Writer, log *slog.Logger, clk clock.Clock, size, writers int) *resultQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &resultQueue{writer: w, log: log, clock: clk, ch: make(chan *results.ContainerResult, size), ctx: ctx, cancel: cancel}
	for range writers {
		q.wg.Go(q.serve)
	}
	return q
}

// add queues r, waiting while the queue is full. Not after close.
func (q *resultQueue) add(r *results.ContainerResult) { q.ch <- r }

func (q *resultQueue) serve() {
	for r := range q.ch {
		q.write(r)
	}
}

func (q *resultQueue) write(r *results.ContainerResult) {
	ctx, cancel := context.WithTimeout(q.ctx, resultWriteTimeout)
	defer cancel()
	if err := q.writer.Create(ctx, r); err != nil {
		q.log.Warn("record container result", "namespace", r.Namespace, "name", r.Spec.PodName,
			"container", r.Spec.ContainerName, "attempt", r.Spec.Attempt, "err", err.Error())
	}
}

// close writes the queued results and stops the writers, giving up (each
// remaining write fails and is logged) after drain. Callers must have
// stopped adding.
func (q *resultQueue) close(drain time.Duration) {
	close(q.ch)
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	t := q.clock.NewTimer(drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		q.cancel()
		<-done
	}
	q.cancel()
}
