package bolt_test

import (
	"context"
	"fmt"
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
