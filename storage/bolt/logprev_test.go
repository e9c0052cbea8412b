package bolt

import (
	"context"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// TestLogPrevValuesAcrossCompaction reads events whose log entries leave
// the previous value to an earlier entry, before and after compactions drop
// that entry, from watches replayed from the file, a List at an old
// revision and the history loaded on reopen.
func TestLogPrevValuesAcrossCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	opts := Options{CompactInterval: -1, NoSync: true, HistoryWindow: 1}
	b, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = b.Create(ctx, "/a", []byte("a1")) // 1
	step("create /a", err)
	_, err = b.Create(ctx, "/b", []byte("b1")) // 2
	step("create /b", err)
	_, err = b.Update(ctx, "/a", []byte("a2"), 1) // 3, previous 1
	step("update /a", err)
	_, err = b.Update(ctx, "/b", []byte("b2"), 2) // 4, previous 2
	step("update /b", err)
	step("checkpoint", b.Checkpoint())
	if got := b.logRecordsWithoutPrev(t); got != 2 {
		t.Fatalf("%d log entries leave their previous value out, want 2 (revisions 3 and 4)", got)
	}
	want := map[int64]string{3: "/a a2 after a1", 4: "/b b2 after b1", 5: "/a deleted a2 after a2"}
	b.checkEventsAfter(t, 2, want)
	b.checkListAt(t, 3, map[string]string{"/a": "a2", "/b": "b1"})

	step("compact 2", b.Compact(ctx, 2)) // drops 1 and 2, which 3 and 4 refer to
	b.checkEventsAfter(t, 2, want)
	b.checkListAt(t, 3, map[string]string{"/a": "a2", "/b": "b1"})

	_, _, err = b.Delete(ctx, "/a", 3) // 5, previous 3
	step("delete /a", err)
	step("checkpoint", b.Checkpoint())
	step("compact 3", b.Compact(ctx, 3))
	b.checkEventsAfter(t, 3, want)

	step("close", b.Close())
	b, err = Open(path, Options{CompactInterval: -1, NoSync: true, HistoryWindow: 10})
	step("reopen", err)
	b.checkEventsAfter(t, 3, want)
}

// logRecordsWithoutPrev counts the log entries that leave their previous
// value out.
func (b *Backend) logRecordsWithoutPrev(t *testing.T) int {
	t.Helper()
	n := 0
	err := b.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketLog).ForEach(func(k, v []byte) error {
			_, needsPrev, err := decodeLogRecord(keyRev(k), v, 0)
			if needsPrev {
				n++
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkEventsAfter watches from rev (> 0) and compares the events up to the
// current revision with want (revision -> "key value after prev").
func (b *Backend) checkEventsAfter(t *testing.T, rev int64, want map[int64]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Watch(ctx, "/", rev)
	if err != nil {
		t.Fatalf("watch after %d: %v", rev, err)
	}
	for next := rev + 1; next <= b.CurrentRevision(); {
		for _, ev := range <-ch {
			if w, ok := want[ev.KV.ModRevision]; ok {
				got := ev.KV.Key + " " + string(ev.KV.Value) + " after " + string(ev.PrevKV.Value)
				if ev.Type == storage.EventDeleted {
					got = ev.KV.Key + " deleted " + string(ev.KV.Value) + " after " + string(ev.PrevKV.Value)
				}
				if got != w {
					t.Fatalf("watch after %d: revision %d is %q, want %q", rev, ev.KV.ModRevision, got, w)
				}
			}
			next = ev.KV.ModRevision + 1
		}
	}
}

// checkListAt lists the state as of rev.
func (b *Backend) checkListAt(t *testing.T, rev int64, want map[string]string) {
	t.Helper()
	res, err := b.List(context.Background(), "/", storage.ListOptions{Revision: rev})
	if err != nil {
		t.Fatalf("list at %d: %v", rev, err)
	}
	got := map[string]string{}
	for _, kv := range res.Items {
		got[kv.Key] = string(kv.Value)
	}
	if len(got) != len(want) {
		t.Fatalf("list at %d = %v, want %v", rev, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("list at %d = %v, want %v", rev, got, want)
		}
	}
}
