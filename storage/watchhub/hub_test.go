package watchhub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
)

func ev(rev int64, key string) storage.Event {
	return storage.Event{Type: storage.EventCreated, KV: storage.KeyValue{Key: key, Value: []byte(key), CreateRevision: rev, ModRevision: rev}}
}

func revs(evs []storage.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.KV.ModRevision
	}
	return out
}

func collect(t *testing.T, ch <-chan []storage.Event, n int) []storage.Event {
	t.Helper()
	var out []storage.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case b, ok := <-ch:
			if !ok {
				t.Fatalf("closed after %d events", len(out))
			}
			out = append(out, b...)
		case <-timeout:
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

func TestReplayFromHistoryThenLive(t *testing.T) {
	h := New(100)
	h.Publish([]storage.Event{ev(1, "/a"), ev(2, "/b"), ev(3, "/a2")})
	ch, err := h.Watch(context.Background(), "/a", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Publish([]storage.Event{ev(4, "/a3"), ev(5, "/c")})
	got := revs(collect(t, ch, 2))
	if got[0] != 3 || got[1] != 4 {
		t.Fatalf("got revisions %v, want [3 4]", got)
	}
}

func TestWatchAheadOfPublishedSkipsOlderEvents(t *testing.T) {
	// A backend may have committed revision 3 before publishing it; a
	// watch from 3 must not see 2 or 3 again.
	h := NewAt(100, 1)
	ch, err := h.Watch(context.Background(), "/", 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Publish([]storage.Event{ev(2, "/a"), ev(3, "/b"), ev(4, "/c")})
	if got := revs(collect(t, ch, 1)); len(got) != 1 || got[0] != 4 {
		t.Fatalf("got revisions %v, want [4]", got)
	}
}

func TestTrimmedHistoryIsCompacted(t *testing.T) {
	h := New(4)
	for r := int64(1); r <= 10; r++ {
		h.Publish([]storage.Event{ev(r, "/k")})
	}
	if oldest := h.OldestRevision(); oldest <= 2 {
		t.Fatalf("history not trimmed: oldest %d", oldest)
	}
	if _, err := h.Watch(context.Background(), "/", 1, 0); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch from trimmed revision: %v", err)
	}
	if _, err := h.Watch(context.Background(), "/", 8, 9); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch before the compaction point: %v", err)
	}
	ch, err := h.Watch(context.Background(), "/", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := revs(collect(t, ch, 2)); got[0] != 9 || got[1] != 10 {
		t.Fatalf("got %v, want [9 10]", got)
	}
}

func TestSlowWatcherIsDropped(t *testing.T) {
	h := New(10)
	h.SetMaxPending(5)
	slow, err := h.Watch(context.Background(), "/", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for r := int64(1); r <= 100; r++ {
		h.Publish([]storage.Event{ev(r, "/k")})
	}
	// The channel buffers a few batches; after those it must be closed.
	n := 0
	for range slow {
		n++
	}
	if n >= 100 {
		t.Fatalf("slow watcher received all %d batches instead of being dropped", n)
	}
}

func TestSharedBatchesStayIntact(t *testing.T) {
	h := New(100)
	a, _ := h.Watch(context.Background(), "/", 0, 0)
	b, _ := h.Watch(context.Background(), "/x", 0, 0)
	batch := []storage.Event{ev(1, "/x1"), ev(2, "/y")}
	h.Publish(batch)
	h.Publish([]storage.Event{ev(3, "/x2")})
	gotA := revs(collect(t, a, 3))
	gotB := collect(t, b, 2)
	if gotA[0] != 1 || gotA[1] != 2 || gotA[2] != 3 {
		t.Fatalf("watcher a got %v", gotA)
	}
	if gotB[0].KV.Key != "/x1" || gotB[1].KV.Key != "/x2" {
		t.Fatalf("watcher b got %v", revs(gotB))
	}
}

func TestCloseEndsWatches(t *testing.T) {
	h := New(10)
	ch, _ := h.Watch(context.Background(), "/", 0, 0)
	h.Close()
	if _, ok := <-ch; ok {
		t.Fatal("watch still open after Close")
	}
	if _, err := h.Watch(context.Background(), "/", 0, 0); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
}
