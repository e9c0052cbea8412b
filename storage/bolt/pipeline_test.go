package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

// heldSync stands in for fdatasync: each call sends a channel on calls
// and returns what the test sends on it.
type heldSync struct {
	calls chan chan error
}

func holdSyncs(b *Backend) *heldSync {
	h := &heldSync{calls: make(chan chan error)}
	b.wal.fsync = func(*os.File) error {
		release := make(chan error)
		h.calls <- release
		return <-release
	}
	return h
}

func openSynced(t *testing.T, path string) *Backend {
	t.Helper()
	b, err := Open(path, Options{CompactInterval: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noEvents fails when the watch has delivered anything.
func noEvents(t *testing.T, ch <-chan []storage.Event, when string) {
	t.Helper()
	select {
	case evs := <-ch:
		t.Fatalf("%s: watch got %d events (first rev %d)", when, len(evs), evs[0].KV.ModRevision)
	default:
	}
}

func TestWriteInvisibleUntilSynced(t *testing.T) {
	b := openSynced(t, filepath.Join(t.TempDir(), "state.db"))
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	rev0 := b.CurrentRevision()
	watch, err := b.Watch(ctx, "/k/", rev0)
	if err != nil {
		t.Fatal(err)
	}
	h := holdSyncs(b)
	created := make(chan result, 1)
	go func() {
		rev, err := b.Create(ctx, "/k/a", []byte("a"))
		created <- result{rev: rev, err: err}
	}()
	held := <-h.calls // appended to the WAL, its fdatasync under way
	if _, err := b.Get(ctx, "/k/a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get before the sync = %v, want ErrNotFound", err)
	}
	if res, err := b.List(ctx, "/k/", storage.ListOptions{}); err != nil || len(res.Items) != 0 {
		t.Fatalf("List before the sync = %d items, %v; want none", len(res.Items), err)
	}
	if got := b.CurrentRevision(); got != rev0 {
		t.Fatalf("CurrentRevision before the sync = %d, want %d", got, rev0)
	}
	noEvents(t, watch, "before the sync")
	select {
	case res := <-created:
		t.Fatalf("Create answered before its sync: %+v", res)
	default:
	}
	held <- nil
	res := <-created
	if res.err != nil || res.rev != rev0+1 {
		t.Fatalf("Create = %d, %v; want revision %d", res.rev, res.err, rev0+1)
	}
	if kv, err := b.Get(ctx, "/k/a"); err != nil || string(kv.Value) != "a" {
		t.Fatalf("Get after the sync = %q, %v", kv.Value, err)
	}
	if evs := <-watch; evs[0].KV.ModRevision != res.rev {
		t.Fatalf("watch got revision %d, want %d", evs[0].KV.ModRevision, res.rev)
	}
}

func TestFailedSyncFailsLaterWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openSynced(t, path)
	ctx := context.Background()
	keep, err := b.Create(ctx, "/k/kept", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	watch, err := b.Watch(ctx, "/k/", keep)
	if err != nil {
		t.Fatal(err)
	}
	h := holdSyncs(b)
	errs := make(chan error, 3)
	write := func(key string) { _, err := b.Create(ctx, key, []byte(key)); errs <- err }
	go write("/k/failed")
	failing := <-h.calls
	go write("/k/later") // queued while the failing fdatasync runs
	failing <- syscall.EIO
	for range 2 {
		if err := <-errs; !errors.Is(err, syscall.EIO) {
			t.Fatalf("write after a failed fdatasync = %v, want EIO", err)
		}
	}
	// The latch holds for every write from now on, without a sync.
	if _, err := b.Create(ctx, "/k/after", []byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after the latch = %v, want EIO", err)
	}
	if err := b.Ready(); err == nil {
		t.Fatal("Ready = nil after a failed fdatasync")
	}
	for _, key := range []string{"/k/failed", "/k/later", "/k/after"} {
		if _, err := b.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get %s = %v, want ErrNotFound", key, err)
		}
	}
	if got := b.CurrentRevision(); got != keep {
		t.Fatalf("CurrentRevision = %d, want %d", got, keep)
	}
	noEvents(t, watch, "after the failed sync")
	_ = b.Close()
	// The failed record was cut off again: a restart does not bring back a
	// write whose caller was told it failed.
	b = openSynced(t, path)
	defer func() { _ = b.Close() }()
	for _, key := range []string{"/k/failed", "/k/later"} {
		if _, err := b.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("after reopening, Get %s = %v, want ErrNotFound", key, err)
		}
	}
	if kv, err := b.Get(ctx, "/k/kept"); err != nil || string(kv.Value) != "kept" {
		t.Fatalf("after reopening, Get /k/kept = %q, %v", kv.Value, err)
	}
}

func TestPipelinedRevisionsInOrder(t *testing.T) {
	b := openSynced(t, filepath.Join(t.TempDir(), "state.db"))
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	rev0 := b.CurrentRevision()
	watch, err := b.Watch(ctx, "/", rev0)
	if err != nil {
		t.Fatal(err)
	}
	// Writers racing on shared counters (compare-and-swap updates) and on
	// keys of their own: each batch is staged against the one still in
	// flight.
	const writers, rounds, counters = 16, 40, 4
	for c := range counters {
		if _, err := b.Create(ctx, fmt.Sprintf("/c/%d", c), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	applied := map[int64]string{} // revision answered -> key
	increments := make([]int, counters)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := fmt.Sprintf("/c/%d", (w+i)%counters)
				kv, err := b.Get(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				n, err := strconv.Atoi(string(kv.Value))
				if err != nil {
					t.Error(err)
					return
				}
				rev, err := b.Update(ctx, key, []byte(fmt.Sprint(n+1)), kv.ModRevision)
				if errors.Is(err, storage.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				own := fmt.Sprintf("/w/%d/%d", w, i)
				rev2, err := b.Create(ctx, own, []byte("x"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				applied[rev], applied[rev2] = key, own
				increments[(w+i)%counters]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for c := range counters {
		kv, err := b.Get(ctx, fmt.Sprintf("/c/%d", c))
		if err != nil || string(kv.Value) != fmt.Sprint(increments[c]) {
			t.Fatalf("counter %d = %q, %v; want %d (an update lost or applied twice)", c, kv.Value, err, increments[c])
		}
	}
	// Every revision from rev0 on reaches the watch once, in order, with
	// the key its writer was answered with.
	want := rev0 + counters + int64(len(applied))
	next := rev0 + 1
	for next <= want {
		for _, ev := range <-watch {
			if ev.KV.ModRevision != next {
				t.Fatalf("watch got revision %d, want %d", ev.KV.ModRevision, next)
			}
			if key, ok := applied[next]; ok && key != ev.KV.Key {
				t.Fatalf("revision %d is %s in the watch, %s to its writer", next, ev.KV.Key, key)
			}
			next++
		}
	}
	if got := b.CurrentRevision(); got != want {
		t.Fatalf("CurrentRevision = %d, want %d", got, want)
	}
}

func TestCloseAnswersWritesInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openSynced(t, path)
	ctx := context.Background()
	h := holdSyncs(b)
	const writers = 20
	type answer struct {
		key string
		err error
	}
	answers := make(chan answer, writers)
	for i := range writers {
		go func() {
			key := fmt.Sprintf("/k/%02d", i)
			_, err := b.Create(ctx, key, []byte(key))
			answers <- answer{key, err}
		}()
	}
	first := <-h.calls // one batch is being synced, the others wait or queue
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	for !b.isClosed() {
		runtime.Gosched()
	}
	go func() { // every later batch syncs at once
		for release := range h.calls {
			release <- nil
		}
	}()
	first <- nil
	var ok []string
	for range writers {
		a := <-answers
		switch {
		case a.err == nil:
			ok = append(ok, a.key)
		case !errors.Is(a.err, storage.ErrClosed):
			t.Fatalf("write %s during Close = %v", a.key, a.err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	close(h.calls) // no sync follows Close
	if len(ok) == 0 {
		t.Fatal("no write in flight was committed")
	}
	b = openSynced(t, path)
	defer func() { _ = b.Close() }()
	for _, key := range ok {
		if _, err := b.Get(ctx, key); err != nil {
			t.Fatalf("acknowledged %s after reopening: %v", key, err)
		}
	}
}

func TestStageSeesWritesInFlight(t *testing.T) {
	b := openSynced(t, filepath.Join(t.TempDir(), "state.db"))
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	durable, err := b.Create(ctx, "/k/b", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	// In flight, not yet installed: /k/a created, /k/b deleted.
	inA := storage.KeyValue{Key: "/k/a", Value: []byte("a"), CreateRevision: durable + 1, ModRevision: durable + 1}
	p := &pipeline{inflight: map[string]inflightKV{
		"/k/a": {kv: &inA, rev: durable + 1},
		"/k/b": {rev: durable + 2},
	}, lastRev: durable + 2}
	tests := []struct {
		name    string
		req     request
		wantRev int64
		wantErr error
	}{
		{"create of a key created in flight", request{op: opCreate, key: "/k/a"}, 0, storage.ErrExists},
		{"update against the durable revision", request{op: opUpdate, key: "/k/a", expectedRev: durable}, 0, storage.ErrConflict},
		{"update against the revision in flight", request{op: opUpdate, key: "/k/a", expectedRev: durable + 1}, durable + 3, nil},
		{"update of a key deleted in flight", request{op: opUpdate, key: "/k/b"}, 0, storage.ErrNotFound},
		{"create of a key deleted in flight", request{op: opCreate, key: "/k/b"}, durable + 4, nil},
	}
	batch := make([]*request, len(tests))
	for i := range tests {
		batch[i] = &tests[i].req
	}
	results := make([]result, len(batch))
	events, err := b.stage(batch, results, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		if results[i].rev != tt.wantRev || !errors.Is(results[i].err, tt.wantErr) {
			t.Errorf("%s: rev %d, err %v; want rev %d, err %v", tt.name, results[i].rev, results[i].err, tt.wantRev, tt.wantErr)
		}
	}
	if len(events) != 2 || events[0].PrevKV == nil || events[0].PrevKV.ModRevision != durable+1 || events[0].KV.CreateRevision != durable+1 {
		t.Fatalf("events = %+v; want the update to follow the create in flight", events)
	}
}

func TestPruneKeepsNewerWritesInFlight(t *testing.T) {
	ev := func(key string, rev int64) storage.Event {
		return storage.Event{Type: storage.EventUpdated, KV: storage.KeyValue{Key: key, ModRevision: rev}}
	}
	done := make(chan struct{})
	close(done)
	answered := &flight{events: []storage.Event{ev("/a", 1), ev("/b", 2)}, done: done}
	pending := &flight{events: []storage.Event{ev("/b", 3)}, done: make(chan struct{})}
	// Failed before its append: its revisions were handed out again.
	refused := &flight{events: []storage.Event{ev("/c", 4)}, err: ErrNoSpace, done: done}
	p := &pipeline{inflight: map[string]inflightKV{}}
	p.track(answered.events)
	p.track(pending.events)
	p.inflight["/c"] = inflightKV{rev: 4}
	p.queue = []*flight{refused, answered, pending}
	p.prune()
	if _, ok := p.inflight["/a"]; ok {
		t.Error("/a still in flight after its flight was answered")
	}
	if e, ok := p.inflight["/b"]; !ok || e.rev != 3 {
		t.Errorf("/b = %+v, %v; want its newer write (revision 3) in flight", e, ok)
	}
	if _, ok := p.inflight["/c"]; !ok {
		t.Error("/c forgotten by a flight that never reached the WAL")
	}
	if len(p.queue) != 1 || p.queue[0] != pending {
		t.Errorf("queue = %d flights, want the pending one", len(p.queue))
	}
}
