package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
)

// TestListAtRevisionAcrossCheckpoint reads an old state whose later changes
// are partly in the bbolt log and partly only in the WAL.
func TestListAtRevisionAcrossCheckpoint(t *testing.T) {
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1, CheckpointInterval: time.Hour})
	ctx := context.Background()
	for i := range 4 {
		if _, err := b.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v0")); err != nil {
			t.Fatal(err)
		}
	}
	at := b.CurrentRevision()
	if _, err := b.Update(ctx, "/k/0", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Delete(ctx, "/k/1", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, "/k/2", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, "/k/0", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/k/9", []byte("new")); err != nil {
		t.Fatal(err)
	}
	old, err := b.List(ctx, "/k/", storage.ListOptions{Revision: at})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeItems(old.Items); got != "/k/0=v0 /k/1=v0 /k/2=v0 /k/3=v0" {
		t.Fatalf("state at %d: %s", at, got)
	}
	now, err := b.List(ctx, "/k/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeItems(now.Items); got != "/k/0=v2 /k/2=v1 /k/3=v0 /k/9=new" {
		t.Fatalf("current state: %s", got)
	}
	if now.Revision != b.CurrentRevision() {
		t.Fatalf("list revision %d, want %d", now.Revision, b.CurrentRevision())
	}
}

func describeItems(items []storage.KeyValue) string {
	s := ""
	for i, kv := range items {
		if i > 0 {
			s += " "
		}
		s += kv.Key + "=" + string(kv.Value)
	}
	return s
}

func TestBackgroundCompactorKeepsRecentRevisions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b, _ := openTemp(t, bolt.Options{Clock: clk, CompactInterval: time.Minute, KeepRevisions: 5})
	ctx := context.Background()
	for i := range 20 {
		if _, err := b.Create(ctx, fmt.Sprintf("/k/%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Step the fake clock until the compactor has run; every run compacts
	// to the same revision since nothing is written meanwhile.
	deadline := time.Now().Add(20 * time.Second)
	for b.CompactRevision() != 15 {
		if time.Now().After(deadline) {
			t.Fatalf("CompactRevision %d, want 15", b.CompactRevision())
		}
		clk.Step(time.Minute)
		time.Sleep(time.Millisecond)
	}
	if _, err := b.Watch(ctx, "/k/", 14); err != storage.ErrCompacted {
		t.Fatalf("Watch below the compaction point: %v", err)
	}
	if _, err := b.List(ctx, "/k/", storage.ListOptions{Revision: 16}); err != nil {
		t.Fatalf("List at a kept revision: %v", err)
	}
}

// TestWatchOlderThanMemoryHistory resumes a watch from a revision that only
// the on-disk log still has, across a restart, and gets every event in
// order followed by live ones.
func TestWatchOlderThanMemoryHistory(t *testing.T) {
	opts := bolt.Options{CompactInterval: -1, HistoryWindow: 4, CheckpointInterval: time.Hour}
	b, path := openTemp(t, opts)
	ctx := context.Background()
	if _, err := b.Create(ctx, "/pre", nil); err != nil { // so start-1 is not 0 ("now")
		t.Fatal(err)
	}
	start, err := b.Create(ctx, "/k/seed", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := b.Create(ctx, fmt.Sprintf("/k/%02d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Create(ctx, fmt.Sprintf("/other/%02d", i), nil); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			if err := b.Checkpoint(); err != nil { // part in the file, part only in the WAL
				t.Fatal(err)
			}
		}
	}
	check := func(b *bolt.Backend, what string, earlierLive int) {
		t.Helper()
		ch, err := b.Watch(ctx, "/k/", start)
		if err != nil {
			t.Fatalf("%s: Watch from %d: %v", what, start, err)
		}
		live, err := b.Create(ctx, "/k/live-"+what, nil)
		if err != nil {
			t.Fatal(err)
		}
		evs := receiveN(t, ch, 31+earlierLive)
		for i, ev := range evs[:30] {
			if want := fmt.Sprintf("/k/%02d", i); ev.KV.Key != want || ev.KV.ModRevision != start+1+2*int64(i) {
				t.Fatalf("%s: event %d is %s@%d, want %s@%d", what, i, ev.KV.Key, ev.KV.ModRevision, want, start+1+2*int64(i))
			}
		}
		if last := evs[len(evs)-1]; last.KV.ModRevision != live {
			t.Fatalf("%s: live event %s@%d, want revision %d", what, last.KV.Key, last.KV.ModRevision, live)
		}
	}
	check(b, "running", 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := b2.Compact(ctx, start); err != nil {
		t.Fatal(err)
	}
	check(b2, "reopened", 1)
	if _, err := b2.Watch(ctx, "/k/", start-1); err != storage.ErrCompacted {
		t.Fatalf("Watch before the compaction point: %v", err)
	}
}

// TestWALSegmentsAreReleased checks that checkpoints drop the WAL segments
// they cover and that a clean Close leaves none behind.
func TestWALSegmentsAreReleased(t *testing.T) {
	b, path := openTemp(t, bolt.Options{CompactInterval: -1, WALSegmentSize: 4 << 10, CheckpointInterval: time.Hour})
	ctx := context.Background()
	value := make([]byte, 512)
	for i := range 100 {
		if _, err := b.Create(ctx, fmt.Sprintf("/k/%03d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	segs := func() []string {
		m, err := filepath.Glob(path + ".wal-*")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if n := len(segs()); n < 5 {
		t.Fatalf("only %d WAL segments for 50 KiB of writes in 4 KiB segments", n)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := len(segs()); n != 1 {
		t.Fatalf("%d WAL segments after a checkpoint, want only the current one: %v", n, segs())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := segs(); len(left) != 0 {
		t.Fatalf("WAL segments left after Close: %v", left)
	}
	b2, err := bolt.Open(path, bolt.Options{CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	res, err := b2.List(ctx, "/k/", storage.ListOptions{})
	if err != nil || len(res.Items) != 100 || res.Revision != 100 {
		t.Fatalf("after reopen: %d items at %d, %v", len(res.Items), res.Revision, err)
	}
}
