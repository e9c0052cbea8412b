package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// compactChunk is how many log entries one compaction transaction deletes,
// so a large compaction never holds the write lock for long.
const compactChunk = 10_000

// Compact drops the log up to and including rev. Watches and Lists at or
// after rev keep working; older ones get storage.ErrCompacted.
func (b *Backend) Compact(ctx context.Context, rev int64) error {
	if err := b.readable(ctx); err != nil {
		return err
	}
	if rev > b.rev.Load() {
		return storage.ErrFuture
	}
	b.compMu.Lock()
	defer b.compMu.Unlock()
	if rev <= b.compactRev.Load() {
		return nil
	}
	// Record the new compaction point first: entries above it stay, so a
	// crash before the deletes finish leaves a consistent store.
	err := b.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaCompct, revKey(rev))
	})
	if err != nil {
		return fmt.Errorf("compact to %d: %w", rev, mapErr(err))
	}
	b.compactRev.Store(rev)
	for {
		n, err := b.compactChunk(rev)
		if err != nil {
			return fmt.Errorf("compact to %d: %w", rev, mapErr(err))
		}
		if n < compactChunk {
			return nil
		}
	}
}

// compactChunk deletes up to compactChunk log entries at or below rev.
func (b *Backend) compactChunk(rev int64) (int, error) {
	n := 0
	err := b.db.Update(func(tx *bbolt.Tx) error {
		logB := tx.Bucket(bucketLog)
		var keys [][]byte
		c := logB.Cursor()
		for k, _ := c.First(); k != nil && keyRev(k) <= rev && len(keys) < compactChunk; k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := logB.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	b.stats.compactions.Add(1)
	return n, err
}

// compactor compacts the log on every tick, keeping KeepRevisions revisions
// and, with Retention, none older than that.
func (b *Backend) compactor() {
	defer close(b.compD)
	t := b.opts.Clock.NewTicker(b.opts.CompactInterval)
	defer t.Stop()
	var samples []revSample
	for {
		select {
		case <-b.stopC:
			return
		case now := <-t.C():
			cur := b.rev.Load()
			samples = append(samples, revSample{at: now, rev: cur})
			var target int64
			target, samples = compactTarget(cur, b.opts.KeepRevisions, now.Add(-b.opts.Retention), b.opts.Retention > 0, samples)
			if target <= b.compactRev.Load() {
				continue
			}
			if err := b.Compact(context.Background(), target); err != nil && !errors.Is(err, storage.ErrClosed) {
				b.opts.Logger.Error("background compaction failed", "revision", target, "err", err)
			}
		}
	}
}
