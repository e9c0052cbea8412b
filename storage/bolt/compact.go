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
	// crash before the deletes finish leaves a consistent store. In the
	// same transaction, the entries above it that leave their previous
	// value to an entry at or below it get it written in.
	err := b.db.Update(func(tx *bbolt.Tx) error {
		if err := inlinePrevs(tx.Bucket(bucketLog), rev, b.legacyUpTo); err != nil {
			return err
		}
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

// inlinePrevs rewrites the log entries above rev whose previous value is
// only in the entry of a revision at or below rev, which compaction is
// about to drop, to hold that value. Only a key's first change above rev
// can refer to one, so there are few: keys that had not changed for a
// while.
func inlinePrevs(logB *bbolt.Bucket, rev, legacyUpTo int64) error {
	type fix struct{ key, rec []byte }
	var fixes []fix
	c := logB.Cursor()
	for k, v := c.Seek(revKey(rev + 1)); k != nil; k, v = c.Next() {
		if prevRev, ok := omittedPrevRev(v); !ok || prevRev > rev {
			continue
		}
		ev, _, err := decodeLogRecord(keyRev(k), v, legacyUpTo)
		if err != nil {
			return err
		}
		if err := fillLogPrev(logB, &ev, legacyUpTo); err != nil {
			return err
		}
		fixes = append(fixes, fix{key: cloneBytes(k), rec: encodeLogEvent(nil, &ev, rev)}) // copies the values out of the pages
	}
	for _, f := range fixes {
		if err := logB.Put(f.key, f.rec); err != nil {
			return fmt.Errorf("write previous value into log entry %d: %w", keyRev(f.key), err)
		}
	}
	return nil
}

// omittedPrevRev reads, without checking or copying the record, the
// previous revision of a log record that leaves its value out; ok is false
// for any other record.
func omittedPrevRev(rec []byte) (prevRev int64, ok bool) {
	if len(rec) < 6 || rec[0] != logMarker || rec[5]&noPrevValue == 0 {
		return 0, false
	}
	r := reader{b: rec[6:]}
	r.bytes(r.int()) // key
	r.int()          // create revision
	prevRev = r.int()
	if r.err != nil {
		return 0, true // damaged: the caller's full decode says how
	}
	return prevRev, true
}
