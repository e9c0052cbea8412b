package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

// zeroCopyTests cover the methods that lend or take over values
// (GetShared, CreateOwned, UpdateOwned, Visit): the API server's hot paths
// use them, so they must behave as their copying twins on every backend.
var zeroCopyTests = map[string]func(*testing.T, NewBackend){
	"GetSharedIsGet":          testGetShared,
	"OwnedWritesAreWrites":    testOwnedWrites,
	"VisitIsList":             testVisitIsList,
	"VisitStopCountsTheRest":  testVisitStop,
	"VisitErrorEndsTheWalk":   testVisitError,
	"VisitFutureOrGone":       testVisitFutureAndCompacted,
	"HistoryIsBoundedByStore": testHistoryBounded,
}

func testGetShared(t *testing.T, nb NewBackend) {
	b := nb(t)
	c := mustCreate(t, b, "/a", "one")
	u := mustUpdate(t, b, "/a", "two", c)
	kv, err := b.GetShared(context.Background(), "/a")
	if err != nil {
		t.Fatalf("GetShared: %v", err)
	}
	wantKV(t, kv, "/a", "two", c, u)
	_, err = b.GetShared(context.Background(), "/missing")
	wantErr(t, "GetShared of a missing key", err, storage.ErrNotFound)
}

func testOwnedWrites(t *testing.T, nb NewBackend) {
	b := nb(t)
	ctx := context.Background()
	c, err := b.CreateOwned(ctx, "/a", []byte("one"))
	if err != nil {
		t.Fatalf("CreateOwned: %v", err)
	}
	_, err = b.CreateOwned(ctx, "/a", []byte("again"))
	wantErr(t, "CreateOwned of an existing key", err, storage.ErrExists)
	_, err = b.UpdateOwned(ctx, "/a", []byte("two"), c+1)
	wantErr(t, "UpdateOwned with a stale revision", err, storage.ErrConflict)
	_, err = b.UpdateOwned(ctx, "/missing", []byte("two"), 0)
	wantErr(t, "UpdateOwned of a missing key", err, storage.ErrNotFound)
	u, err := b.UpdateOwned(ctx, "/a", []byte("two"), c)
	if err != nil {
		t.Fatalf("UpdateOwned: %v", err)
	}
	kv, err := b.Get(ctx, "/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a", "two", c, u)
	if b.CurrentRevision() != u {
		t.Fatalf("CurrentRevision %d, want %d", b.CurrentRevision(), u)
	}
}

// visited is what a walk saw: keys copied, values copied.
type visited struct {
	keys []string
	kvs  []storage.KeyValue
}

func visitAll(t *testing.T, b storage.Backend, prefix string, opts storage.ListOptions, stopAfter int) (visited, storage.ListResult) {
	t.Helper()
	var v visited
	res, err := b.Visit(context.Background(), prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
		if kv.Key != "" {
			t.Errorf("Visit handed kv.Key %q, want it empty", kv.Key)
		}
		kv.Key, kv.Value = string(key), append([]byte(nil), kv.Value...)
		v.keys = append(v.keys, kv.Key)
		v.kvs = append(v.kvs, kv)
		return stopAfter > 0 && len(v.keys) >= stopAfter, nil
	})
	if err != nil {
		t.Fatalf("Visit(%q, %+v): %v", prefix, opts, err)
	}
	if res.Items != nil {
		t.Fatalf("Visit returned %d items, want none", len(res.Items))
	}
	return v, res
}

// testVisitIsList walks the same pages List returns, at the current and
// (where the backend serves it) an older revision.
func testVisitIsList(t *testing.T, nb NewBackend) {
	b := nb(t)
	for _, k := range []string{"/k/3", "/k/1", "/k/2", "/k/4", "/other/1"} {
		mustCreate(t, b, k, "v"+k)
	}
	at := b.CurrentRevision()
	mustUpdate(t, b, "/k/2", "changed", 0)
	mustDelete(t, b, "/k/3", 0)
	for _, opts := range []storage.ListOptions{{}, {Limit: 2}, {After: "/k/1", Limit: 1}, {Revision: at}, {Revision: at, Limit: 2, After: "/k/1"}} {
		want, err := b.List(context.Background(), "/k/", opts)
		if errors.Is(err, storage.ErrCompacted) && opts.Revision != 0 {
			continue // the backend lists the current state only
		}
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		got, res := visitAll(t, b, "/k/", opts, 0)
		if fmt.Sprint(got.kvs) != fmt.Sprint(want.Items) {
			t.Fatalf("Visit(%+v) saw %v, List has %v", opts, got.kvs, want.Items)
		}
		if res.Revision != want.Revision || res.More != want.More || res.Remaining != want.Remaining {
			t.Fatalf("Visit(%+v) = rev %d more %v remaining %d, List = rev %d more %v remaining %d",
				opts, res.Revision, res.More, res.Remaining, want.Revision, want.More, want.Remaining)
		}
	}
}

// testVisitStop: a walk stopped early reports the keys after the last one
// visited as remaining, with and without a limit.
func testVisitStop(t *testing.T, nb NewBackend) {
	b := nb(t)
	for i := 1; i <= 5; i++ {
		mustCreate(t, b, "/k/"+itoa(int64(i)), "v")
	}
	cases := []struct {
		limit, stopAfter int64
		wantKeys         []string
		wantMore         bool
		wantRemaining    int64
	}{
		{limit: 0, stopAfter: 2, wantKeys: []string{"/k/1", "/k/2"}, wantMore: true, wantRemaining: 3},
		{limit: 3, stopAfter: 2, wantKeys: []string{"/k/1", "/k/2"}, wantMore: true, wantRemaining: 3},
		{limit: 0, stopAfter: 5, wantKeys: []string{"/k/1", "/k/2", "/k/3", "/k/4", "/k/5"}, wantMore: false, wantRemaining: 0},
		{limit: 2, stopAfter: 2, wantKeys: []string{"/k/1", "/k/2"}, wantMore: true, wantRemaining: 3},
	}
	for _, tc := range cases {
		got, res := visitAll(t, b, "/k/", storage.ListOptions{Limit: tc.limit}, int(tc.stopAfter))
		if fmt.Sprint(got.keys) != fmt.Sprint(tc.wantKeys) || res.More != tc.wantMore {
			t.Fatalf("limit %d, stop after %d: visited %v more %v, want %v more %v", tc.limit, tc.stopAfter, got.keys, res.More, tc.wantKeys, tc.wantMore)
		}
		if res.Remaining >= 0 && res.Remaining != tc.wantRemaining {
			t.Fatalf("limit %d, stop after %d: remaining %d, want %d", tc.limit, tc.stopAfter, res.Remaining, tc.wantRemaining)
		}
	}
}

func testVisitError(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/k/1", "v")
	mustCreate(t, b, "/k/2", "v")
	boom := errors.New("boom")
	calls := 0
	_, err := b.Visit(context.Background(), "/k/", storage.ListOptions{}, func([]byte, storage.KeyValue) (bool, error) {
		calls++
		return false, boom
	})
	wantErr(t, "Visit whose callback fails", err, boom)
	if calls != 1 {
		t.Fatalf("visit called %d times after failing, want 1", calls)
	}
}

func testVisitFutureAndCompacted(t *testing.T, nb NewBackend) {
	b := nb(t)
	r1 := mustCreate(t, b, "/k/1", "a")
	r2 := mustCreate(t, b, "/k/2", "b")
	mustCreate(t, b, "/k/3", "c")
	never := func([]byte, storage.KeyValue) (bool, error) { return false, errors.New("visited") }
	_, err := b.Visit(context.Background(), "/k/", storage.ListOptions{Revision: b.CurrentRevision() + 1}, never)
	wantErr(t, "Visit in the future", err, storage.ErrFuture)
	if err := b.Compact(context.Background(), r2); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	_, err = b.Visit(context.Background(), "/k/", storage.ListOptions{Revision: r1}, never)
	wantErr(t, "Visit before the compaction point", err, storage.ErrCompacted)
}

// testHistoryBounded: the backend bounds its history itself. After many
// more writes than any backend keeps by default in memory, a Watch from a
// revision at or after CompactRevision starts, one from before it fails,
// and CompactRevision never passes the current revision.
func testHistoryBounded(t *testing.T, nb NewBackend) {
	b := nb(t)
	const writes = 300
	first := mustCreate(t, b, "/k", "0")
	for i := 1; i < writes; i++ {
		mustUpdate(t, b, "/k", itoa(int64(i)), 0)
	}
	cur, compacted := b.CurrentRevision(), b.CompactRevision()
	if compacted > cur {
		t.Fatalf("CompactRevision %d beyond current %d", compacted, cur)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := max(compacted, first) // 0 would mean "from now"
	ch, err := b.Watch(ctx, "/", from)
	if err != nil {
		t.Fatalf("Watch from %d (compacted %d, current %d): %v", from, compacted, cur, err)
	}
	got := receive(t, ch, int(cur-from))
	if got[0].KV.ModRevision != from+1 || got[len(got)-1].KV.ModRevision != cur {
		t.Fatalf("watch from %d saw %d..%d, want %d..%d", from, got[0].KV.ModRevision, got[len(got)-1].KV.ModRevision, from+1, cur)
	}
	if compacted >= first {
		_, err := b.Watch(ctx, "/", compacted-1)
		wantErr(t, "Watch from before CompactRevision", err, storage.ErrCompacted)
	}
}
