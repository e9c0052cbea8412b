package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

var concurrencyTests = map[string]func(*testing.T, NewBackend){
	"UniqueIncreasingRevisions": testConcurrentRevisions,
	"WatchSeesEveryEventOnce":   testWatchUnderConcurrentWrites,
	"ConflictingUpdatesOneWins": testConflictingUpdates,
}

const (
	writers         = 16
	writesPerWriter = 50
)

// writeConcurrently runs writers goroutines that each create and update
// their own keys; it returns each writer's revisions in call order.
func writeConcurrently(t *testing.T, b storage.Backend) [][]int64 {
	t.Helper()
	revs := make([][]int64, writers)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writesPerWriter / 2 {
				key := fmt.Sprintf("/c/%02d/%03d", w, i)
				r, err := b.Create(context.Background(), key, []byte("v1"))
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", key, err)
					return
				}
				r2, err := b.Update(context.Background(), key, []byte("v2"), r)
				if err != nil {
					errs <- fmt.Errorf("update %s: %w", key, err)
					return
				}
				revs[w] = append(revs[w], r, r2)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return revs
}

func testConcurrentRevisions(t *testing.T, nb NewBackend) {
	b := nb(t)
	start := b.CurrentRevision()
	revs := writeConcurrently(t, b)
	seen := map[int64]bool{}
	for w, rs := range revs {
		for i, r := range rs {
			if seen[r] {
				t.Fatalf("revision %d handed out twice", r)
			}
			seen[r] = true
			if i > 0 && r <= rs[i-1] {
				t.Fatalf("writer %d: revision %d after %d", w, r, rs[i-1])
			}
		}
	}
	total := int64(writers * writesPerWriter)
	if int64(len(seen)) != total {
		t.Fatalf("%d revisions for %d writes", len(seen), total)
	}
	for r := start + 1; r <= start+total; r++ {
		if !seen[r] {
			t.Fatalf("revision %d skipped", r)
		}
	}
	if got := b.CurrentRevision(); got != start+total {
		t.Fatalf("CurrentRevision %d, want %d", got, start+total)
	}
	res := list(t, b, "/c/", storage.ListOptions{})
	if int64(len(res.Items)) != total/2 {
		t.Fatalf("listed %d keys, want %d", len(res.Items), total/2)
	}
	for _, kv := range res.Items {
		if string(kv.Value) != "v2" || kv.ModRevision <= kv.CreateRevision || !seen[kv.ModRevision] {
			t.Fatalf("key %s has %q@%d", kv.Key, kv.Value, kv.ModRevision)
		}
	}
}

func testWatchUnderConcurrentWrites(t *testing.T, nb NewBackend) {
	b := nb(t)
	start := mustCreate(t, b, "/seed", "x") // a watch from 0 would mean "from now"
	ch, err := b.Watch(ctxT(t), "/c/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	late := make(chan (<-chan []storage.Event), 1)
	go func() {
		// A second watcher joins mid-stream from the start revision and
		// must get the same sequence through replay plus live events.
		ch2, err := b.Watch(context.Background(), "/c/", start)
		if errors.Is(err, storage.ErrCompacted) && b.CompactRevision() >= start {
			// A backend with a short history may have compacted start
			// away already: refusing the watch is then the right answer.
			close(late)
			return
		}
		if err != nil {
			t.Errorf("late Watch: %v", err)
			close(late)
			return
		}
		late <- ch2
	}()
	writeConcurrently(t, b)
	total := writers * writesPerWriter
	check := func(name string, evs []storage.Event) {
		t.Helper()
		perKey := map[string]int{}
		for i, ev := range evs {
			if ev.KV.ModRevision != start+int64(i)+1 {
				t.Fatalf("%s: event %d has revision %d, want %d", name, i, ev.KV.ModRevision, start+int64(i)+1)
			}
			n := perKey[ev.KV.Key]
			wantType := storage.EventCreated
			if n == 1 {
				wantType = storage.EventUpdated
			}
			if n > 1 || ev.Type != wantType {
				t.Fatalf("%s: %s event #%d for %s", name, ev.Type, n+1, ev.KV.Key)
			}
			perKey[ev.KV.Key] = n + 1
		}
	}
	check("first watcher", receive(t, ch, total))
	if ch2, ok := <-late; ok {
		check("late watcher", receive(t, ch2, total))
	}
}

func testConflictingUpdates(t *testing.T, nb NewBackend) {
	b := nb(t)
	base := mustCreate(t, b, "/x", "base")
	const racers = 16
	results := make(chan error, racers)
	for i := range racers {
		go func() {
			_, err := b.Update(context.Background(), "/x", []byte(fmt.Sprint(i)), base)
			results <- err
		}()
	}
	wins := 0
	for range racers {
		err := <-results
		switch {
		case err == nil:
			wins++
		default:
			wantErr(t, "losing Update", err, storage.ErrConflict)
		}
	}
	if wins != 1 {
		t.Fatalf("%d updates won against revision %d, want exactly 1", wins, base)
	}
	if got := b.CurrentRevision(); got != base+1 {
		t.Fatalf("CurrentRevision %d, want %d", got, base+1)
	}
}
