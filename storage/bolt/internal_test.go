package bolt

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
)

func sampleEvents() []storage.Event {
	prev := storage.KeyValue{Key: "/k", Value: []byte("v1"), CreateRevision: 5, ModRevision: 5}
	return []storage.Event{
		{Type: storage.EventCreated, KV: storage.KeyValue{Key: "/k", Value: []byte("v1"), CreateRevision: 5, ModRevision: 5}},
		{Type: storage.EventUpdated, KV: storage.KeyValue{Key: "/k", Value: []byte("v2"), CreateRevision: 5, ModRevision: 6}, PrevKV: &prev},
		{Type: storage.EventDeleted, KV: storage.KeyValue{Key: "/k", Value: []byte("v1"), CreateRevision: 5, ModRevision: 7}, PrevKV: &prev},
		{Type: storage.EventCreated, KV: storage.KeyValue{Key: "/empty", Value: []byte{}, CreateRevision: 8, ModRevision: 8}},
	}
}

func TestEventCodecRoundTrip(t *testing.T) {
	for _, want := range sampleEvents() {
		rec := encodeEvent(nil, &want)
		if len(rec) > eventSize(&want) {
			t.Fatalf("%s: encoded %d bytes, size bound %d", want.Type, len(rec), eventSize(&want))
		}
		got, err := decodeEvent(want.KV.ModRevision, rec)
		if err != nil {
			t.Fatalf("%s: %v", want.Type, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %s:\n got %+v prev %+v\nwant %+v prev %+v", want.Type, got, got.PrevKV, want, want.PrevKV)
		}
	}
	if _, err := decodeEvent(1, []byte{9, 1, 'k', 1}); err == nil {
		t.Fatal("unknown event type decoded without error")
	}
	if _, err := decodeEvent(1, []byte{0, 200}); err == nil {
		t.Fatal("truncated record decoded without error")
	}
}

func TestWALStopsAtTornTail(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	w, err := openWAL(db, 1<<20, nil, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	evs := sampleEvents()
	if _, err := w.append(evs[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.append(evs[2:]); err != nil {
		t.Fatal(err)
	}
	name := w.f.Name()
	if err := w.f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// Tear the second record.
	if err := os.WriteFile(name, data[:len(data)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(segmentPrefix(db))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	got, _, err := readSegments(segs, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].KV.ModRevision != 5 || got[1].KV.ModRevision != 6 {
		t.Fatalf("replayed %d events, want revisions 5 and 6", len(got))
	}
	// Events already in bbolt are skipped.
	if got, _, _ := readSegments(segs, 5); len(got) != 1 || got[0].KV.ModRevision != 6 {
		t.Fatalf("replay after 5 gave %d events", len(got))
	}
}

func TestCompactTarget(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	samples := []revSample{{base, 100}, {base.Add(time.Minute), 200}, {base.Add(2 * time.Minute), 300}}
	tests := []struct {
		name        string
		cur, keep   int64
		cutoff      time.Time
		byAge       bool
		want        int64
		wantSamples int
	}{
		{"keep revisions only", 1000, 100, time.Time{}, false, 900, 0},
		{"never negative", 50, 100, time.Time{}, false, 0, 0},
		{"age compacts further", 310, 1000, base.Add(90 * time.Second), true, 200, 2},
		{"count compacts further", 5000, 100, base.Add(90 * time.Second), true, 4900, 2},
		{"nothing old enough", 310, 1000, base.Add(-time.Second), true, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest := compactTarget(tt.cur, tt.keep, tt.cutoff, tt.byAge, append([]revSample(nil), samples...))
			if got != tt.want || len(rest) != tt.wantSamples {
				t.Fatalf("target %d with %d samples kept, want %d with %d", got, len(rest), tt.want, tt.wantSamples)
			}
		})
	}
}

// TestRecentKeysAnswerAsBboltDoes: once checkpointed, a key's state is
// served from the recent keys, which must say what bbolt says: the
// newest value, a delete as absent, and nothing for a key evicted.
func TestRecentKeysAnswerAsBboltDoes(t *testing.T) {
	o := newOverlay()
	o.recent = newRecentKeys(2)
	evs := sampleEvents()
	o.install(evs[:2]) // /k created, then updated to v2
	o.checkpointed(2)
	if len(o.keys) != 0 {
		t.Fatalf("checkpointed keys still pending: %v", o.keys)
	}
	kv, found := o.get("/k")
	if !found || kv == nil || string(kv.Value) != "v2" || kv.ModRevision != 6 {
		t.Fatalf("get /k after checkpoint = %+v, %v; want v2 at 6", kv, found)
	}
	o.install(evs[2:3]) // /k deleted, not yet checkpointed
	if kv, found := o.get("/k"); !found || kv != nil {
		t.Fatalf("get /k deleted in the WAL = %+v, %v; want deleted", kv, found)
	}
	o.checkpointed(1)
	if kv, found := o.get("/k"); !found || kv != nil {
		t.Fatalf("get /k deleted and checkpointed = %+v, %v; want deleted", kv, found)
	}
	o.install([]storage.Event{
		{Type: storage.EventCreated, KV: storage.KeyValue{Key: "/a", Value: []byte("a"), CreateRevision: 9, ModRevision: 9}},
		{Type: storage.EventCreated, KV: storage.KeyValue{Key: "/b", Value: []byte("b"), CreateRevision: 10, ModRevision: 10}},
	})
	o.checkpointed(2)
	if _, found := o.get("/k"); found {
		t.Fatal("/k still answered after two newer keys filled a recent set of 2")
	}
	if kv, found := o.get("/b"); !found || string(kv.Value) != "b" {
		t.Fatalf("get /b = %+v, %v; want b", kv, found)
	}
}

// TestGetRemembersOnlyCurrentReads: a value read from bbolt is kept among
// the recent keys only if no checkpoint ran since the read began, so a
// stale read can never shadow a newer write.
func TestGetRemembersOnlyCurrentReads(t *testing.T) {
	b, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{NoSync: true, CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := t.Context()
	if _, err := b.Create(ctx, "/ns", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	b.ov.recent = newRecentKeys(4) // as if /ns had been evicted
	kv, err := b.Get(ctx, "/ns")
	if err != nil || string(kv.Value) != "v1" {
		t.Fatalf("get /ns = %q, %v; want v1", kv.Value, err)
	}
	if e, ok := b.ov.recent.items["/ns"]; !ok || string(e.kv.Value) != "v1" {
		t.Fatalf("read of /ns not remembered: %+v, %v", e, ok)
	}
	kv.Value[0] = 'X' // the caller's copy is its own
	if got, _ := b.Get(ctx, "/ns"); string(got.Value) != "v1" {
		t.Fatalf("caller's change reached the store: %q", got.Value)
	}
	b.ov.recent = newRecentKeys(4)
	stale := storage.KeyValue{Key: "/ns", Value: []byte("v1"), CreateRevision: 1, ModRevision: 1}
	gen := b.ov.generation
	if _, err := b.Update(ctx, "/ns", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	b.ov.recent = newRecentKeys(4)
	b.remember(stale, gen)
	if _, ok := b.ov.recent.items["/ns"]; ok {
		t.Fatal("a read from before a checkpoint was remembered")
	}
	if got, _ := b.Get(ctx, "/ns"); string(got.Value) != "v2" {
		t.Fatalf("get /ns = %q; want v2", got.Value)
	}
}

// TestOwnedWritesAndSharedReads: a handed-over value is stored as given
// and read back shared, while Get's copy stays the caller's own.
func TestOwnedWritesAndSharedReads(t *testing.T) {
	b, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{NoSync: true, CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := t.Context()
	rev, err := b.CreateOwned(ctx, "/o", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateOwned(ctx, "/o", []byte("again")); err != storage.ErrExists {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if _, err := b.UpdateOwned(ctx, "/o", []byte("v2"), rev+10); err != storage.ErrConflict {
		t.Fatalf("update at a wrong revision: %v, want ErrConflict", err)
	}
	if _, err := b.UpdateOwned(ctx, "/o", []byte("v2"), rev); err != nil {
		t.Fatal(err)
	}
	for _, checkpoint := range []bool{false, true} {
		if checkpoint {
			if err := b.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		shared, err := b.GetShared(ctx, "/o")
		if err != nil || string(shared.Value) != "v2" {
			t.Fatalf("checkpointed %v: GetShared = %q, %v; want v2", checkpoint, shared.Value, err)
		}
		own, _ := b.Get(ctx, "/o")
		own.Value[0] = 'X'
		if again, _ := b.GetShared(ctx, "/o"); string(again.Value) != "v2" {
			t.Fatalf("checkpointed %v: a change to Get's copy reached the store: %q", checkpoint, again.Value)
		}
	}
	if _, err := b.GetShared(ctx, "/missing"); err != storage.ErrNotFound {
		t.Fatalf("GetShared of a missing key: %v, want ErrNotFound", err)
	}
}

func TestWALEventCodec(t *testing.T) {
	for _, want := range sampleEvents() {
		got, needsPrev, err := decodeAnyEvent(want.KV.ModRevision, appendEventNoPrev(nil, &want))
		if err != nil {
			t.Fatalf("%s: %v", want.Type, err)
		}
		if needsPrev != (want.Type != storage.EventCreated) {
			t.Fatalf("%s: needsPrev %v", want.Type, needsPrev)
		}
		if needsPrev {
			// Replay fills these in from the state before the event.
			filled := *got.PrevKV
			filled.Value = want.PrevKV.Value
			got.PrevKV = &filled
			if want.Type == storage.EventDeleted {
				got.KV.Value = want.KV.Value
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %s:\n got %+v prev %+v\nwant %+v prev %+v", want.Type, got, got.PrevKV, want, want.PrevKV)
		}
		// Records written before the log left previous values out replay
		// as they are.
		old, needsPrev, err := decodeAnyEvent(want.KV.ModRevision, encodeEvent(nil, &want))
		if err != nil || needsPrev || !reflect.DeepEqual(old, want) {
			t.Fatalf("full record of %s: %+v, needsPrev %v, %v", want.Type, old, needsPrev, err)
		}
	}
	if _, _, err := decodeAnyEvent(1, []byte{byte(storage.EventDeleted) | noPrevValue, 1, 'k', 1, 1, 'x'}); err == nil {
		t.Fatal("a delete record with trailing bytes decoded without error")
	}
}

// TestReplayTakesPrevFromStore replays a write-ahead log update onto a
// checkpointed key: its previous value comes from the bbolt file, and a
// log that does not fit the file is refused.
func TestReplayTakesPrevFromStore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prevRev int64
		wantErr string
	}{
		{"fits", 1, ""},
		{"another point in time", 7, "the write-ahead log does not fit the store: revision 2 changes /k from revision 7, but the store holds revision 1 for it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			b, err := Open(path, Options{CompactInterval: -1, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Create(context.Background(), "/k", []byte("v1")); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			w, err := openWAL(path, 1<<20, nil, 0, false, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			prev := storage.KeyValue{Key: "/k", CreateRevision: 1, ModRevision: tt.prevRev}
			ev := storage.Event{Type: storage.EventUpdated, KV: storage.KeyValue{Key: "/k", Value: []byte("v2"), CreateRevision: 1, ModRevision: 2}, PrevKV: &prev}
			if _, err := w.append([]storage.Event{ev}); err != nil {
				t.Fatal(err)
			}
			_ = w.f.Close()
			b, err = Open(path, Options{CompactInterval: -1, NoSync: true})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ch, err := b.Watch(context.Background(), "/k", 1)
			if err != nil {
				t.Fatal(err)
			}
			got := <-ch
			if len(got) != 1 || string(got[0].KV.Value) != "v2" || got[0].PrevKV == nil || string(got[0].PrevKV.Value) != "v1" {
				t.Fatalf("replayed update reads back as %+v", got)
			}
		})
	}
}
