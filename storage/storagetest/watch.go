package storagetest

import (
	"context"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

var watchTests = map[string]func(*testing.T, NewBackend){
	"FromNow":            testWatchFromNow,
	"FromZeroSkipsPast":  testWatchFromZeroSkipsPast,
	"FromOldRevision":    testWatchFromOldRevision,
	"FromCurrent":        testWatchFromCurrent,
	"Compacted":          testWatchCompacted,
	"Future":             testWatchFuture,
	"PrefixFilter":       testWatchPrefix,
	"CancelClosesStream": testWatchCancel,
	"ManyWatchersShare":  testManyWatchers,
}

func testWatchFromNow(t *testing.T, nb NewBackend) {
	b := nb(t)
	ch, err := b.Watch(ctxT(t), "/a/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	c := mustCreate(t, b, "/a/1", "one")
	u := mustUpdate(t, b, "/a/1", "two", c)
	d := mustDelete(t, b, "/a/1", u)
	checkEvents(t, receive(t, ch, 3), []wantEvent{
		{typ: storage.EventCreated, key: "/a/1", value: "one", rev: c, creation: c},
		{typ: storage.EventUpdated, key: "/a/1", value: "two", rev: u, creation: c, hasPrev: true, prevVal: "one", prevRev: c},
		{typ: storage.EventDeleted, key: "/a/1", value: "two", rev: d, creation: c, hasPrev: true, prevVal: "two", prevRev: u},
	})
}

func testWatchFromZeroSkipsPast(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/a/old", "old")
	ch, err := b.Watch(ctxT(t), "/a/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	r := mustCreate(t, b, "/a/new", "new")
	checkEvents(t, receive(t, ch, 1), []wantEvent{{typ: storage.EventCreated, key: "/a/new", value: "new", rev: r}})
}

func testWatchFromOldRevision(t *testing.T, nb NewBackend) {
	b := nb(t)
	c1 := mustCreate(t, b, "/a/1", "one")
	c2 := mustCreate(t, b, "/a/2", "two")
	u1 := mustUpdate(t, b, "/a/1", "one-b", 0)
	d2 := mustDelete(t, b, "/a/2", 0)
	ch, err := b.Watch(ctxT(t), "/a/", c1)
	if err != nil {
		t.Fatalf("Watch from %d: %v", c1, err)
	}
	live := mustCreate(t, b, "/a/3", "three")
	checkEvents(t, receive(t, ch, 4), []wantEvent{
		{typ: storage.EventCreated, key: "/a/2", value: "two", rev: c2},
		{typ: storage.EventUpdated, key: "/a/1", value: "one-b", rev: u1, hasPrev: true, prevVal: "one", prevRev: c1},
		{typ: storage.EventDeleted, key: "/a/2", value: "two", rev: d2, hasPrev: true, prevVal: "two", prevRev: c2},
		{typ: storage.EventCreated, key: "/a/3", value: "three", rev: live},
	})
}

func testWatchFromCurrent(t *testing.T, nb NewBackend) {
	b := nb(t)
	cur := mustCreate(t, b, "/a/1", "one")
	ch, err := b.Watch(ctxT(t), "/a/", cur)
	if err != nil {
		t.Fatalf("Watch from current %d: %v", cur, err)
	}
	next := mustUpdate(t, b, "/a/1", "two", 0)
	checkEvents(t, receive(t, ch, 1), []wantEvent{
		{typ: storage.EventUpdated, key: "/a/1", value: "two", rev: next, hasPrev: true, prevVal: "one", prevRev: cur},
	})
}

func testWatchCompacted(t *testing.T, nb NewBackend) {
	b := nb(t)
	r1 := mustCreate(t, b, "/a/1", "1")
	r2 := mustUpdate(t, b, "/a/1", "2", 0)
	r3 := mustUpdate(t, b, "/a/1", "3", 0)
	if err := b.Compact(context.Background(), r2); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	_, err := b.Watch(ctxT(t), "/a/", r1)
	wantErr(t, "Watch before the compaction point", err, storage.ErrCompacted)
	ch, err := b.Watch(ctxT(t), "/a/", r2)
	if err != nil {
		t.Fatalf("Watch at the compaction point: %v", err)
	}
	checkEvents(t, receive(t, ch, 1), []wantEvent{
		{typ: storage.EventUpdated, key: "/a/1", value: "3", rev: r3, hasPrev: true, prevVal: "2", prevRev: r2},
	})
}

func testWatchFuture(t *testing.T, nb NewBackend) {
	b := nb(t)
	r := mustCreate(t, b, "/a/1", "1")
	_, err := b.Watch(ctxT(t), "/a/", r+1)
	wantErr(t, "Watch in the future", err, storage.ErrFuture)
}

func testWatchPrefix(t *testing.T, nb NewBackend) {
	b := nb(t)
	ch, err := b.Watch(ctxT(t), "/pods/ns/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	mustCreate(t, b, "/pods/ns2/a", "x")
	mustCreate(t, b, "/pods/nsx", "x")
	r := mustCreate(t, b, "/pods/ns/a", "y")
	mustCreate(t, b, "/jobs/ns/a", "x")
	last := mustCreate(t, b, "/pods/ns/b", "z")
	checkEvents(t, receive(t, ch, 2), []wantEvent{
		{typ: storage.EventCreated, key: "/pods/ns/a", value: "y", rev: r},
		{typ: storage.EventCreated, key: "/pods/ns/b", value: "z", rev: last},
	})
}

func testWatchCancel(t *testing.T, nb NewBackend) {
	b := nb(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancel()
	for range ch { // drains anything queued before the cancel
	}
	// The backend keeps working for others.
	other, err := b.Watch(ctxT(t), "/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	r := mustCreate(t, b, "/a", "1")
	checkEvents(t, receive(t, other, 1), []wantEvent{{typ: storage.EventCreated, key: "/a", value: "1", rev: r}})
}

func testManyWatchers(t *testing.T, nb NewBackend) {
	b := nb(t)
	const watchers = 20
	chans := make([]<-chan []storage.Event, watchers)
	for i := range chans {
		ch, err := b.Watch(ctxT(t), "/a/", 0)
		if err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
		chans[i] = ch
	}
	c := mustCreate(t, b, "/a/1", "one")
	u := mustUpdate(t, b, "/a/1", "two", 0)
	for i, ch := range chans {
		evs := receive(t, ch, 2)
		if evs[0].KV.ModRevision != c || evs[1].KV.ModRevision != u || string(evs[1].KV.Value) != "two" {
			t.Fatalf("watcher %d got %s", i, describe(evs))
		}
	}
}
