package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

type opKind uint8

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

// request is one queued write and the channel its result goes to.
type request struct {
	op          opKind
	key         string
	value       []byte
	expectedRev int64
	done        chan result
}

type result struct {
	rev  int64
	prev storage.KeyValue // the deleted value, for Delete
	err  error
}

// Create stores value under a new key; storage.ErrExists if present.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return b.CreateOwned(ctx, key, cloneBytes(value)) // the caller may reuse its buffer
}

// Update replaces the value when the key's ModRevision is expectedRev (0:
// unconditionally).
func (b *Backend) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	return b.UpdateOwned(ctx, key, cloneBytes(value), expectedRev)
}

// CreateOwned is Create for a caller that hands value over: the store
// keeps it without copying it, and the caller must not change it after.
func (b *Backend) CreateOwned(ctx context.Context, key string, value []byte) (int64, error) {
	res := b.submitOwned(ctx, &request{op: opCreate, key: key, value: value})
	return res.rev, res.err
}

// UpdateOwned is Update for a caller that hands value over, as for
// CreateOwned.
func (b *Backend) UpdateOwned(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	res := b.submitOwned(ctx, &request{op: opUpdate, key: key, value: value, expectedRev: expectedRev})
	return res.rev, res.err
}

// Delete removes the key when its ModRevision is expectedRev (0:
// unconditionally) and returns the revision of the delete and the last value.
func (b *Backend) Delete(ctx context.Context, key string, expectedRev int64) (int64, storage.KeyValue, error) {
	res := b.submitOwned(ctx, &request{op: opDelete, key: key, expectedRev: expectedRev})
	return res.rev, res.prev, res.err
}

// submitOwned queues the write, whose value the store keeps as it is, and
// waits for its commit. Once queued, a write is applied even if ctx ends,
// so the caller always learns its outcome.
func (b *Backend) submitOwned(ctx context.Context, r *request) result {
	if err := ctx.Err(); err != nil {
		return result{err: err}
	}
	r.done = make(chan result, 1)
	b.closeMu.RLock()
	if b.closed {
		b.closeMu.RUnlock()
		return result{err: storage.ErrClosed}
	}
	b.reqs <- r
	b.closeMu.RUnlock()
	return <-r.done
}

// drain adds whatever is already queued, up to MaxBatch.
func (b *Backend) drain(batch []*request) []*request {
	for len(batch) < b.opts.MaxBatch {
		select {
		case r, ok := <-b.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// appendWAL writes events to the WAL. A failed append that could not be
// cut off again leaves the WAL in an unknown state, so every later write
// fails too; one that was cut off (a full disk) only fails this batch.
func (b *Backend) appendWAL(events []storage.Event) error {
	b.walErrMu.Lock()
	defer b.walErrMu.Unlock()
	if b.walErr != nil {
		return b.walErr
	}
	size := b.wal.size
	rolledBack, err := b.wal.append(events)
	b.stats.walBytes.Add(b.wal.size - size)
	if err != nil && rolledBack && isNoSpace(err) {
		b.noteSpace(causeAppend, err)
		return err
	}
	if err != nil {
		b.latchWAL(err)
		return err
	}
	b.noteSpace(causeAppend, nil)
	return nil
}

// latchWAL makes err the answer to every later write. Called with
// walErrMu held.
func (b *Backend) latchWAL(err error) {
	if b.walErr != nil {
		return
	}
	b.walErr = err
	b.opts.Logger.Error("write-ahead log failed; the store refuses writes until reopened", "file", b.path, "err", err)
}

// makeRoom starts a new WAL segment when the current one is full and
// returns the error creates and updates get while the disk is full (nil
// when they may run). When no segment can be made, the current one keeps
// taking deletes in its reserve. The writer calls it between batches, so
// every record of the segment it closes is synced.
func (b *Backend) makeRoom() error {
	if b.wal.full() {
		err := b.wal.rotate()
		switch {
		case err == nil || isNoSpace(err):
			b.noteSpace(causeRotate, err)
		default:
			b.walErrMu.Lock()
			b.latchWAL(err)
			b.walErrMu.Unlock()
		}
	}
	return b.space.refusal(b.path)
}

// stage evaluates each write in order against the state left by the ones
// before it, those of earlier batches still in flight included, and
// assigns revisions after the last one appended. It fills results and
// returns the events. With noRoom, creates and updates fail with it and
// only deletes run.
func (b *Backend) stage(batch []*request, results []result, noRoom error, p *pipeline) ([]storage.Event, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	tx, err := b.db.Begin(false)
	if err != nil {
		return nil, mapErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	kvB := tx.Bucket(bucketKV)
	staged := map[string]*storage.KeyValue{}
	current := func(key string) (*storage.KeyValue, error) {
		if kv, ok := staged[key]; ok {
			return kv, nil
		}
		if e, ok := p.inflight[key]; ok {
			return e.kv, nil
		}
		if kv, ok := b.ov.get(key); ok {
			return kv, nil
		}
		rec := kvB.Get([]byte(key))
		if rec == nil {
			return nil, nil
		}
		kv, err := decodeKV(key, rec, b.legacyUpTo)
		if err != nil {
			return nil, err
		}
		kv.Value = cloneBytes(kv.Value)
		return &kv, nil
	}
	rev := p.lastRev
	events := make([]storage.Event, 0, len(batch))
	for i, r := range batch {
		if noRoom != nil && r.op != opDelete {
			results[i] = result{err: noRoom}
			continue
		}
		prev, err := current(r.key)
		if err != nil {
			return nil, err
		}
		if err := precondition(r, prev); err != nil {
			results[i] = result{err: err}
			continue
		}
		rev++
		ev := newEvent(r, prev, rev)
		events = append(events, ev)
		results[i] = result{rev: rev}
		if r.op == opDelete {
			results[i].prev = *prev
			staged[r.key] = nil
		} else {
			kv := ev.KV
			staged[r.key] = &kv
		}
	}
	return events, nil
}

// newEvent builds the event of a write that passed its precondition.
func newEvent(r *request, prev *storage.KeyValue, rev int64) storage.Event {
	ev := storage.Event{KV: storage.KeyValue{Key: r.key, Value: r.value, CreateRevision: rev, ModRevision: rev}}
	switch r.op {
	case opCreate:
		ev.Type = storage.EventCreated
	case opUpdate:
		ev.Type = storage.EventUpdated
		ev.KV.CreateRevision = prev.CreateRevision
		ev.PrevKV = prev
	case opDelete:
		ev.Type = storage.EventDeleted
		ev.KV = *prev
		ev.KV.ModRevision = rev
		ev.PrevKV = prev
	}
	return ev
}

// applyEvents writes checkpointed events into bbolt: each event's log
// entry, and the new state of each key changed (only its last change in
// events: the states before it would be overwritten in the same
// transaction). Log entries leave out previous values above compactRev
// (codec.go). bbolt keeps references to keys and values until the commit,
// so every record gets its own buffer from arena.
func applyEvents(kvB, logB *bbolt.Bucket, events []storage.Event, compactRev int64, arena *recordArena) error {
	logB.FillPercent = 1.0 // the log only grows at its end
	superseded := supersededEvents(events)
	for i := range events {
		ev := &events[i]
		if !superseded[i] {
			if err := applyKV(kvB, ev, arena); err != nil {
				return err
			}
		}
		rec := encodeLogEvent(arena.alloc(eventSize(ev)), ev, compactRev)
		if err := logB.Put(appendRevKey(arena.alloc(8), ev.KV.ModRevision), rec); err != nil {
			return fmt.Errorf("append log %d: %w", ev.KV.ModRevision, err)
		}
	}
	return nil
}

// applyKV stores the key's state after ev.
func applyKV(kvB *bbolt.Bucket, ev *storage.Event, arena *recordArena) error {
	key := append(arena.alloc(len(ev.KV.Key)), ev.KV.Key...)
	if ev.Type == storage.EventDeleted {
		if err := kvB.Delete(key); err != nil {
			return fmt.Errorf("delete %s: %w", ev.KV.Key, err)
		}
		return nil
	}
	rec := encodeKV(arena.alloc(len(ev.KV.Value)+25), ev.KV.CreateRevision, ev.KV.ModRevision, ev.KV.Value)
	if err := kvB.Put(key, rec); err != nil {
		return fmt.Errorf("put %s: %w", ev.KV.Key, err)
	}
	return nil
}

// supersededEvents marks the events whose key changes again later in
// events.
func supersededEvents(events []storage.Event) []bool {
	out := make([]bool, len(events))
	seen := make(map[string]struct{}, len(events))
	for i := len(events) - 1; i >= 0; i-- {
		key := events[i].KV.Key
		if _, ok := seen[key]; ok {
			out[i] = true
			continue
		}
		seen[key] = struct{}{}
	}
	return out
}

// precondition checks a write against the key's current value (nil when
// absent).
func precondition(r *request, cur *storage.KeyValue) error {
	if r.op == opCreate {
		if cur != nil {
			return storage.ErrExists
		}
		return nil
	}
	if cur == nil {
		return storage.ErrNotFound
	}
	if r.expectedRev != 0 && cur.ModRevision != r.expectedRev {
		return storage.ErrConflict
	}
	return nil
}
