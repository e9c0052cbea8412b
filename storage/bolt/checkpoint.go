package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// kickCheckpoint wakes the checkpointer without waiting.
func (b *Backend) kickCheckpoint() {
	select {
	case b.ckptC <- struct{}{}:
	default:
	}
}

// checkpointer moves WAL-durable writes into bbolt whenever there are some,
// at most once per CheckpointInterval, so each bbolt commit (and its fsync)
// covers many writes.
func (b *Backend) checkpointer() {
	defer close(b.ckptD)
	for {
		select {
		case <-b.stopC:
			return
		case <-b.ckptC:
		}
		if err := b.checkpoint(); err != nil {
			if !isNoSpace(err) { // a full disk is logged when it starts and ends
				b.opts.Logger.Error("checkpoint into bbolt failed", "file", b.path, "err", err)
			}
			b.kickCheckpoint() // retry after the interval
		}
		select {
		case <-b.stopC:
			return
		case <-b.opts.Clock.After(b.opts.CheckpointInterval):
		}
	}
}

// checkpoint commits every pending event into bbolt in one transaction,
// then forgets them in the overlay and drops WAL segments they cover.
func (b *Backend) checkpoint() error {
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	b.mu.RLock()
	events := b.ov.pending[:len(b.ov.pending):len(b.ov.pending)]
	b.mu.RUnlock()
	if len(events) == 0 {
		return nil
	}
	last := events[len(events)-1].KV.ModRevision
	err := b.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		// The compaction point as of this transaction: a compaction after it
		// also sees these entries (compact.go).
		compactRev := readInt(meta, metaCompct)
		if err := applyEvents(tx.Bucket(bucketKV), tx.Bucket(bucketLog), events, compactRev, &b.arena); err != nil {
			return err
		}
		if err := meta.Put(metaKeys, revKey(readInt(meta, metaKeys)+keyDelta(events))); err != nil {
			return err
		}
		return meta.Put(metaRev, revKey(last))
	})
	b.arena.reset() // the transaction has ended: bbolt holds no record any more
	b.stats.checkpoints.Add(1)
	b.noteSpace(causeCheckpoint, err)
	if err != nil {
		return fmt.Errorf("checkpoint %d events up to revision %d: %w", len(events), last, mapErr(err))
	}
	b.mu.Lock()
	b.ov.checkpointed(len(events))
	b.mu.Unlock()
	b.room.Broadcast()
	if b.wal == nil { // replaying on open
		return nil
	}
	return b.wal.release(last)
}

// keyDelta is how many keys the events add to the kv bucket.
func keyDelta(events []storage.Event) int64 {
	var n int64
	for i := range events {
		switch events[i].Type {
		case storage.EventCreated:
			n++
		case storage.EventDeleted:
			n--
		}
	}
	return n
}

// waitForRoom blocks the writer while too many writes await a checkpoint,
// so memory stays bounded when bbolt cannot keep up.
func (b *Backend) waitForRoom() {
	b.mu.Lock()
	for len(b.ov.pending) >= b.opts.MaxPending {
		b.kickCheckpoint()
		b.room.Wait()
	}
	b.mu.Unlock()
}

// pendingSince returns the WAL-durable events after rev that bbolt does not
// have yet (bbolt holds revisions up to boltRev).
func (b *Backend) pendingSince(rev, boltRev int64) []storage.Event {
	return b.ov.since(max(rev, boltRev))
}

// Checkpoint moves every WAL-durable write into the bbolt file now. It is
// not needed for durability; it bounds the WAL replayed on the next Open.
func (b *Backend) Checkpoint() error {
	if b.isClosed() {
		return storage.ErrClosed
	}
	return b.checkpoint()
}
