package bolt

import (
	"fmt"
	"os"

	"github.com/batchlet/batchlet/storage"
)

// The commit pipeline. The writer goroutine stages a batch, appends it to
// the WAL and makes it durable with one fdatasync, then hands it to the
// finisher goroutine, which installs its events in the overlay, publishes
// them and answers its callers, in order, while the writer already stages
// the next batch from the writes queued meanwhile. Installing, publishing
// and answering thus leave the commit path. A write is visible (Get, List,
// Watch) and answered only once it is durable, and the checkpointer only
// ever sees durable events; a batch staged before the previous one is
// installed sees its writes through pipeline.inflight.
//
// One fdatasync at a time: the disk serves concurrent ones about as fast
// as one (docs/benchmarks.md, session 10), but with two records appended
// and neither synced a machine crash could leave a torn record followed
// by a whole one, which replay (walreplay.go) rightly takes for damage of
// an acknowledged write. Concurrent fdatasyncs need replay to tell the two
// apart first.
//
// A failed fdatasync latches the WAL: its batch and every later one fail.

// finishQueue bounds the durable batches waiting for the finisher.
const finishQueue = 4

// flight is a batch on its way through the pipeline.
type flight struct {
	batch   []*request
	results []result
	events  []storage.Event
	err     error         // the batch failed before it reached the WAL
	file    *os.File      // the segment its record went to
	start   int64         // the record's offset in it
	filled  bool          // the segment is zero-filled (walspare.go)
	syncErr error         // its fdatasync failed
	done    chan struct{} // closed once answered
}

// appended reports whether the flight's record is in the WAL.
func (f *flight) appended() bool { return f.err == nil && len(f.events) > 0 }

// inflightKV is a key's state after a write not yet answered.
type inflightKV struct {
	kv  *storage.KeyValue // nil: deleted
	rev int64
}

// pipeline is the writer goroutine's view of its batches in flight.
type pipeline struct {
	finish chan<- *flight
	queue  []*flight // launched, oldest first, until seen answered
	// inflight holds the latest state of the keys written by the queued
	// flights; a key leaves it once the overlay has that state.
	inflight map[string]inflightKV
	lastRev  int64 // the revision of the last write appended
}

// writer commits queued writes in batches until the queue is closed, then
// waits until every batch is answered.
func (b *Backend) writer() {
	defer close(b.writerD)
	finish := make(chan *flight, finishQueue)
	finished := make(chan struct{})
	go b.finisher(finish, finished)
	p := &pipeline{finish: finish, inflight: map[string]inflightKV{}, lastRev: b.rev.Load()}
	for r := range b.reqs {
		batch := b.drain(append(make([]*request, 0, 8), r))
		b.waitForRoom()
		b.commit(p, batch)
	}
	close(finish)
	<-finished
}

// commit stages the batch, appends it to the WAL, syncs it and hands it to
// the finisher.
func (b *Backend) commit(p *pipeline, batch []*request) {
	p.prune()
	f := &flight{batch: batch, results: make([]result, len(batch)), done: make(chan struct{})}
	f.events, f.err = b.stage(batch, f.results, b.makeRoom(), p)
	if f.appended() {
		f.file, f.start, f.filled = b.wal.f, b.wal.size, b.wal.filled
		f.err = b.appendWAL(f.events)
	}
	if f.appended() {
		if f.syncErr = b.syncFlight(f); f.syncErr == nil {
			p.track(f.events)
		}
	}
	p.queue = append(p.queue, f)
	p.finish <- f
}

// track records the state each event leaves its key in.
func (p *pipeline) track(events []storage.Event) {
	for i := range events {
		ev := &events[i]
		e := inflightKV{rev: ev.KV.ModRevision}
		if ev.Type != storage.EventDeleted {
			kv := ev.KV
			e.kv = &kv
		}
		p.inflight[ev.KV.Key] = e
	}
	p.lastRev = events[len(events)-1].KV.ModRevision
}

// prune forgets the flights answered so far: their keys' states are in
// the overlay now, unless a later flight changed them again.
func (p *pipeline) prune() {
	for len(p.queue) > 0 {
		f := p.queue[0]
		select {
		case <-f.done:
		default:
			return
		}
		p.forget(f)
		p.queue[0] = nil
		p.queue = p.queue[1:]
	}
}

func (p *pipeline) forget(f *flight) {
	if !f.appended() || f.syncErr != nil {
		return // never tracked: its revisions may have been handed out again
	}
	for i := range f.events {
		key := f.events[i].KV.Key
		if e, ok := p.inflight[key]; ok && e.rev == f.events[i].KV.ModRevision {
			delete(p.inflight, key)
		}
	}
}

// finisher answers the flights in order until flights is closed.
func (b *Backend) finisher(flights <-chan *flight, exited chan<- struct{}) {
	defer close(exited)
	var failed error // the first failed fdatasync: every later flight fails
	for f := range flights {
		if failed == nil {
			failed = f.syncErr
		}
		b.finish(f, failed)
	}
}

// syncFlight makes the flight's record durable. When the fdatasync fails,
// the WAL is latched and the record is cut off again where possible, so a
// restart does not bring back writes whose callers were told they failed.
func (b *Backend) syncFlight(f *flight) error {
	b.stats.commits.Add(1)
	err := b.wal.sync(f.file)
	if err == nil {
		return nil
	}
	b.walErrMu.Lock()
	defer b.walErrMu.Unlock()
	b.latchWAL(err)
	// The writer runs this: the record is the segment's last.
	if cerr := cutRecords(f.file, f.start, b.wal.size-f.start, f.filled); cerr != nil {
		b.opts.Logger.Error("could not cut failed writes off the write-ahead log", "file", b.path, "err", cerr)
	}
	return err
}

// finish installs the flight's events in the overlay, publishes them and
// answers every caller; failed (non-nil) fails the flight.
func (b *Backend) finish(f *flight, failed error) {
	err := f.err
	if err == nil {
		err = failed
	}
	if err == nil && len(f.events) > 0 {
		b.mu.Lock()
		b.ov.install(f.events)
		b.rev.Store(f.events[len(f.events)-1].KV.ModRevision)
		b.mu.Unlock()
		b.hub.Publish(f.events)
		b.kickCheckpoint()
	}
	if err != nil {
		err = fmt.Errorf("commit %d writes: %w", len(f.batch), err)
		for i := range f.results {
			f.results[i] = result{err: err}
		}
		b.stats.failedCommits.Add(1)
	} else {
		b.stats.record(len(f.batch), len(f.events))
	}
	for i, r := range f.batch {
		r.done <- f.results[i]
	}
	close(f.done)
}
