package bolt

import (
	"context"
	"errors"
	"strings"

	"github.com/batchlet/batchlet/storage"
)

// Watch streams every event under prefix after fromRev (0: from now). Recent
// history is replayed from memory; older history still in the log (not
// compacted) is read from the file first. Compacted history yields
// storage.ErrCompacted.
func (b *Backend) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan []storage.Event, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if fromRev > b.rev.Load() {
		return nil, storage.ErrFuture
	}
	ch, err := b.hub.Watch(ctx, prefix, fromRev, b.compactRev.Load())
	if !errors.Is(err, storage.ErrCompacted) || fromRev < b.compactRev.Load() {
		return ch, err
	}
	return b.watchFromLog(ctx, prefix, fromRev)
}

// watchFromLog serves a watch that starts before the in-memory history: it
// subscribes to the hub from its oldest event, reads the gap from the log
// and sends the gap first.
func (b *Backend) watchFromLog(ctx context.Context, prefix string, fromRev int64) (<-chan []storage.Event, error) {
	for attempt := 0; attempt < 3; attempt++ {
		oldest := b.hub.OldestRevision()
		if oldest == 0 {
			break
		}
		live, err := b.hub.Watch(ctx, prefix, oldest-1, b.compactRev.Load())
		if errors.Is(err, storage.ErrCompacted) {
			continue // the history was trimmed meanwhile
		}
		if err != nil {
			return nil, err
		}
		gap, err := b.readLog(prefix, fromRev, oldest-1)
		if err != nil {
			return nil, err
		}
		out := make(chan []storage.Event, 1)
		go forward(ctx, out, gap, live)
		return out, nil
	}
	return nil, storage.ErrCompacted
}

// readLog returns the events under prefix in (from, to], from the bbolt log
// and the not yet checkpointed writes, or ErrCompacted if the log does not
// reach back to from+1.
func (b *Backend) readLog(prefix string, from, to int64) ([]storage.Event, error) {
	// Take the file snapshot and the pending writes together, so a
	// checkpoint cannot move events out of one and not into the other.
	b.mu.RLock()
	tx, err := b.db.Begin(false)
	pending := b.ov.pending[:len(b.ov.pending):len(b.ov.pending)]
	b.mu.RUnlock()
	if err != nil {
		return nil, mapErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	var out []storage.Event
	next := from + 1
	keep := func(ev storage.Event) bool {
		if ev.KV.ModRevision != next {
			return false
		}
		next++
		if strings.HasPrefix(ev.KV.Key, prefix) {
			out = append(out, ev)
		}
		return true
	}
	logB := tx.Bucket(bucketLog)
	c := logB.Cursor()
	for k, v := c.Seek(revKey(next)); k != nil && keyRev(k) <= to; k, v = c.Next() {
		ev, needsPrev, err := decodeLogRecord(keyRev(k), v, b.legacyUpTo) // values alias the file
		if err == nil && needsPrev && strings.HasPrefix(ev.KV.Key, prefix) {
			err = fillLogPrev(logB, &ev, b.legacyUpTo)
		}
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(ev.KV.Key, prefix) {
			cloneEventValues(&ev)
		}
		if !keep(ev) {
			return nil, storage.ErrCompacted
		}
	}
	for _, ev := range pending {
		if ev.KV.ModRevision < next {
			continue // also in the file
		}
		if ev.KV.ModRevision > to {
			break
		}
		if !keep(ev) {
			return nil, storage.ErrCompacted
		}
	}
	if next != to+1 {
		return nil, storage.ErrCompacted
	}
	return out, nil
}

// forward sends the gap, then everything from live, until ctx ends or live
// closes.
func forward(ctx context.Context, out chan<- []storage.Event, gap []storage.Event, live <-chan []storage.Event) {
	defer close(out)
	if len(gap) > 0 {
		select {
		case out <- gap:
		case <-ctx.Done():
			return
		}
	}
	for batch := range live {
		select {
		case out <- batch:
		case <-ctx.Done():
			return
		}
	}
}
