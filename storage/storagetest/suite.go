// Package storagetest is the conformance suite every storage.Backend must
// pass: run RunTests from the backend's own tests.
package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
)

// NewBackend returns a fresh, empty backend for one subtest. It should
// register its own cleanup; the suite may also Close it (Close must be
// idempotent).
type NewBackend func(t *testing.T) storage.Backend

// RunTests runs the whole suite against backends made by newBackend.
func RunTests(t *testing.T, newBackend func(t *testing.T) storage.Backend) {
	groups := []struct {
		name  string
		tests map[string]func(*testing.T, NewBackend)
	}{
		{"KV", kvTests},
		{"List", listTests},
		{"Watch", watchTests},
		{"Concurrency", concurrencyTests},
		{"ZeroCopy", zeroCopyTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, name := range sortedNames(g.tests) {
				test := g.tests[name]
				t.Run(name, func(t *testing.T) { test(t, newBackend) })
			}
		})
	}
}

// eventWait bounds how long a test waits for an expected event, so a
// missing event fails the test instead of hanging it. It is a deadlock
// guard, not a timing assertion.
const eventWait = 20 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, b storage.Backend, key, value string) int64 {
	t.Helper()
	rev, err := b.Create(context.Background(), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustUpdate(t *testing.T, b storage.Backend, key, value string, expected int64) int64 {
	t.Helper()
	rev, err := b.Update(context.Background(), key, []byte(value), expected)
	if err != nil {
		t.Fatalf("Update(%q, expected %d): %v", key, expected, err)
	}
	return rev
}

func mustDelete(t *testing.T, b storage.Backend, key string, expected int64) int64 {
	t.Helper()
	rev, _, err := b.Delete(context.Background(), key, expected)
	if err != nil {
		t.Fatalf("Delete(%q, expected %d): %v", key, expected, err)
	}
	return rev
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got error %v, want %v", what, got, want)
	}
}

// wantKV checks a stored value and its revisions.
func wantKV(t *testing.T, got storage.KeyValue, key, value string, createRev, modRev int64) {
	t.Helper()
	if got.Key != key || string(got.Value) != value || got.CreateRevision != createRev || got.ModRevision != modRev {
		t.Fatalf("got %s=%q create=%d mod=%d, want %s=%q create=%d mod=%d",
			got.Key, got.Value, got.CreateRevision, got.ModRevision, key, value, createRev, modRev)
	}
}

// receive reads events from ch until it has n of them.
func receive(t *testing.T, ch <-chan []storage.Event, n int) []storage.Event {
	t.Helper()
	var out []storage.Event
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	for len(out) < n {
		select {
		case batch, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			out = append(out, batch...)
		case <-timer.C:
			t.Fatalf("got %d of %d events before giving up", len(out), n)
		}
	}
	if len(out) > n {
		t.Fatalf("got %d events, want %d: %s", len(out), n, describe(out))
	}
	return out
}

// expectClosed waits for ch to close, discarding nothing: any event
// arriving first fails the test.
func expectClosed(t *testing.T, ch <-chan []storage.Event) {
	t.Helper()
	select {
	case batch, ok := <-ch:
		if ok {
			t.Fatalf("want closed watch, got events %s", describe(batch))
		}
	case <-time.After(eventWait):
		t.Fatal("watch was not closed")
	}
}

type wantEvent struct {
	typ      storage.EventType
	key      string
	value    string
	rev      int64
	prevVal  string // checked when hasPrev
	prevRev  int64
	hasPrev  bool
	creation int64 // CreateRevision; 0 skips the check
}

func checkEvents(t *testing.T, got []storage.Event, want []wantEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events %s, want %d", len(got), describe(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ || g.KV.Key != w.key || string(g.KV.Value) != w.value || g.KV.ModRevision != w.rev {
			t.Fatalf("event %d: got %s %s=%q rev %d, want %s %s=%q rev %d",
				i, g.Type, g.KV.Key, g.KV.Value, g.KV.ModRevision, w.typ, w.key, w.value, w.rev)
		}
		if w.creation != 0 && g.KV.CreateRevision != w.creation {
			t.Fatalf("event %d: CreateRevision %d, want %d", i, g.KV.CreateRevision, w.creation)
		}
		if !w.hasPrev {
			if g.PrevKV != nil {
				t.Fatalf("event %d: unexpected PrevKV %q@%d", i, g.PrevKV.Value, g.PrevKV.ModRevision)
			}
			continue
		}
		if g.PrevKV == nil || string(g.PrevKV.Value) != w.prevVal || g.PrevKV.ModRevision != w.prevRev || g.PrevKV.Key != w.key {
			t.Fatalf("event %d: PrevKV %+v, want %s=%q@%d", i, g.PrevKV, w.key, w.prevVal, w.prevRev)
		}
	}
}

func describe(evs []storage.Event) string {
	s := "["
	for i, ev := range evs {
		if i > 0 {
			s += " "
		}
		s += ev.Type.String() + ":" + ev.KV.Key + "@" + itoa(ev.KV.ModRevision)
	}
	return s + "]"
}
