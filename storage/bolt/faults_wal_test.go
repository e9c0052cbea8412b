package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// crash stops the store as a killed process would: queued writes are
// answered, nothing more is checkpointed, the WAL keeps what it has and
// the file still says the run did not end cleanly.
func (b *Backend) crash() {
	b.closeMu.Lock()
	b.closed = true
	close(b.reqs)
	b.closeMu.Unlock()
	<-b.writerD
	close(b.stopC)
	<-b.compD
	<-b.ckptD
	b.hub.Close()
	_ = b.wal.f.Close()
	b.wal.haltSpares() // a killed process prepares no more (its files stay)
	_ = b.db.Close()
}

// walRecord is where one WAL record lies and the keys it created.
type walRecord struct {
	seg       string
	off, size int
	keys      []string
}

// crashedStore is a store killed with acknowledged writes only in its WAL.
type crashedStore struct {
	path    string
	segs    []string
	records []walRecord       // the WAL-only records, in order
	values  map[string]string // every acknowledged write
	seeded  []string          // keys checkpointed into bbolt before the crash
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testValue(i int) string {
	return fmt.Sprintf(`{"kind":"Pod","name":"p%03d","pad":"%s"}`, i, strings.Repeat("x", 40+i%7))
}

// writeAndCrash seeds 3 keys into bbolt, then writes n keys that stay in
// the WAL only (the checkpointer waits on a fake clock), segSize bytes per
// segment, and crashes.
func writeAndCrash(t *testing.T, n int, segSize int64) crashedStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	fc := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	b, err := Open(path, Options{CompactInterval: -1, Clock: fc, WALSegmentSize: segSize, NoSync: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cs := crashedStore{path: path, values: map[string]string{}}
	ctx := context.Background()
	for i := range 3 {
		key := fmt.Sprintf("/seed/%d", i)
		if _, err := b.Create(ctx, key, []byte(testValue(i))); err != nil {
			t.Fatal(err)
		}
		cs.values[key] = testValue(i)
		cs.seeded = append(cs.seeded, key)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for !fc.HasWaiters() { // the checkpointer is parked until the clock moves
		runtime.Gosched()
	}
	if err := b.Checkpoint(); err != nil { // whatever it took before parking
		t.Fatal(err)
	}
	for i := range n {
		key := fmt.Sprintf("/k/%03d", i)
		if _, err := b.Create(ctx, key, []byte(testValue(i))); err != nil {
			t.Fatal(err)
		}
		cs.values[key] = testValue(i)
	}
	b.crash()
	cs.segs, err = listSegments(segmentPrefix(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range cs.segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(data) && !isZero(data[off:]); { // a zero-filled segment's zeros end it
			payload, reason, _ := recordAt(data, off)
			if reason != "" {
				t.Fatalf("%s offset %d before any damage: %s", seg, off, reason)
			}
			evs, err := decodePayload(payload)
			if err != nil {
				t.Fatal(err)
			}
			rec := walRecord{seg: seg, off: off, size: 8 + len(payload)}
			for _, ev := range evs {
				rec.keys = append(rec.keys, ev.KV.Key)
			}
			if !strings.HasPrefix(rec.keys[0], "/seed/") { // those are in bbolt too
				cs.records = append(cs.records, rec)
			}
			off += rec.size
		}
	}
	if len(cs.records) != n {
		t.Fatalf("%d WAL records for %d writes (each write should be its own record)", len(cs.records), n)
	}
	return cs
}

// keysBefore is every acknowledged key except those of records[i:].
func (cs crashedStore) keysBefore(i int) map[string]string {
	out := map[string]string{}
	for k, v := range cs.values {
		out[k] = v
	}
	for _, r := range cs.records[i:] {
		for _, k := range r.keys {
			delete(out, k)
		}
	}
	return out
}

// outcome is what reopening a damaged store must end with: a refusal
// naming the file and offset, or every listed write present.
type outcome struct {
	refuseFile string
	refuseOff  int
	keep       map[string]string
}

func checkOutcome(t *testing.T, path string, want outcome) {
	t.Helper()
	b, err := Open(path, Options{CompactInterval: -1, NoSync: true, Logger: quietLogger()})
	if want.refuseFile != "" {
		var dmg *WALDamageError
		if !errors.As(err, &dmg) {
			if err == nil {
				_ = b.Close()
			}
			t.Fatalf("Open = %v, want a refusal naming %s offset %d", err, filepath.Base(want.refuseFile), want.refuseOff)
		}
		if dmg.File != want.refuseFile || dmg.Offset != int64(want.refuseOff) {
			t.Fatalf("refusal names %s offset %d, want %s offset %d: %v", dmg.File, dmg.Offset, want.refuseFile, want.refuseOff, err)
		}
		if msg := err.Error(); !strings.Contains(msg, want.refuseFile) || !strings.Contains(msg, fmt.Sprintf("offset %d", want.refuseOff)) {
			t.Fatalf("message does not name the file and offset: %s", msg)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer b.Close()
	ctx := context.Background()
	for k, v := range want.keep {
		kv, err := b.Get(ctx, k)
		if err != nil || string(kv.Value) != v {
			t.Fatalf("acknowledged %s: got %q, %v", k, kv.Value, err)
		}
	}
	if _, err := b.Create(ctx, "/after/reopen", []byte("x")); err != nil {
		t.Fatalf("write after reopen: %v", err)
	}
}

func mutate(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWALByteFlips(t *testing.T) {
	// Where in a record the byte is changed: header length, header
	// checksum, payload start, middle and end.
	fields := []struct {
		name string
		at   func(r walRecord) int
	}{
		{"length low byte", func(r walRecord) int { return r.off }},
		{"length high byte", func(r walRecord) int { return r.off + 3 }},
		{"checksum", func(r walRecord) int { return r.off + 5 }},
		{"payload first byte", func(r walRecord) int { return r.off + 8 }},
		{"payload middle", func(r walRecord) int { return r.off + r.size/2 + 4 }},
		{"payload last byte", func(r walRecord) int { return r.off + r.size - 1 }},
	}
	masks := []byte{0x01, 0x80, 0xFF}
	for _, which := range []string{"first", "middle", "last"} {
		for _, f := range fields {
			for _, mask := range masks {
				t.Run(fmt.Sprintf("%s record/%s/xor %#02x", which, f.name, mask), func(t *testing.T) {
					cs := writeAndCrash(t, 5, 1<<20)
					idx := map[string]int{"first": 0, "middle": 2, "last": 4}[which]
					rec := cs.records[idx]
					mutate(t, rec.seg, func(d []byte) []byte { d[f.at(rec)] ^= mask; return d })
					// Every record holds an acknowledged write, the last one
					// too: a changed byte is never taken for a torn write.
					checkOutcome(t, cs.path, outcome{refuseFile: rec.seg, refuseOff: rec.off})
				})
			}
		}
	}
}

func TestWALTruncations(t *testing.T) {
	// Where the file is cut, relative to record i's start.
	cuts := []struct {
		name string
		at   func(r walRecord) int
	}{
		{"at the record boundary", func(r walRecord) int { return r.off }},
		{"inside the length", func(r walRecord) int { return r.off + 3 }},
		{"inside the checksum", func(r walRecord) int { return r.off + 6 }},
		{"after the header", func(r walRecord) int { return r.off + 8 }},
		{"inside the payload", func(r walRecord) int { return r.off + r.size/2 }},
		{"one byte short", func(r walRecord) int { return r.off + r.size - 1 }},
	}
	for _, i := range []int{0, 2, 4} {
		for _, c := range cuts {
			t.Run(fmt.Sprintf("last segment/record %d/%s", i, c.name), func(t *testing.T) {
				cs := writeAndCrash(t, 5, 1<<20)
				rec := cs.records[i]
				mutate(t, rec.seg, func(d []byte) []byte { return d[:c.at(rec)] })
				// A tear: what was written before it is kept.
				checkOutcome(t, cs.path, outcome{keep: cs.keysBefore(i)})
			})
			t.Run(fmt.Sprintf("earlier segment/record %d/%s", i, c.name), func(t *testing.T) {
				cs := writeAndCrash(t, 10, 5*int64(len(testValue(0))+40))
				if len(cs.segs) < 2 || cs.records[4].seg == cs.records[len(cs.records)-1].seg {
					t.Fatalf("want the records in several segments, got %d segments", len(cs.segs))
				}
				rec := cs.records[i]
				mutate(t, rec.seg, func(d []byte) []byte { return d[:c.at(rec)] })
				// Later segments hold acknowledged writes: refused, naming
				// the cut record, or the next record when cut at its start.
				want := outcome{refuseFile: rec.seg, refuseOff: rec.off}
				if c.at(rec) == rec.off {
					want = nextSegmentStart(cs, rec.seg)
				}
				checkOutcome(t, cs.path, want)
			})
		}
	}
}

// nextSegmentStart is the refusal at the first record after seg.
func nextSegmentStart(cs crashedStore, seg string) outcome {
	for _, r := range cs.records {
		if r.seg > seg {
			return outcome{refuseFile: r.seg, refuseOff: r.off}
		}
	}
	return outcome{}
}

func TestWALTornTailOfZeros(t *testing.T) {
	// A machine crash can extend the file over the last record without
	// writing its sectors (read back as zeros): that is a tear, the
	// records before it are kept.
	cs := writeAndCrash(t, 5, 1<<20)
	last := cs.records[4]
	mutate(t, last.seg, func(d []byte) []byte {
		clear(d[last.off:])
		return append(d, make([]byte, 2*sectorSize)...)
	})
	checkOutcome(t, cs.path, outcome{keep: cs.keysBefore(4)})
}

func TestWALMissingSegments(t *testing.T) {
	t.Run("first of several", func(t *testing.T) {
		cs := writeAndCrash(t, 10, 5*int64(len(testValue(0))+40))
		// The first segment with acknowledged writes bbolt lacks (one
		// before it may hold only checkpointed ones: a run moves off its
		// first segment early, onto a zero-filled spare).
		first := cs.records[0].seg
		if err := os.Remove(first); err != nil {
			t.Fatal(err)
		}
		checkOutcome(t, cs.path, nextSegmentStart(cs, first))
	})
	t.Run("all of them", func(t *testing.T) {
		cs := writeAndCrash(t, 5, 1<<20)
		for _, s := range cs.segs {
			if err := os.Remove(s); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Open(cs.path, Options{CompactInterval: -1, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), "write-ahead log missing") || !strings.Contains(err.Error(), cs.segs[0]) {
			t.Fatalf("Open = %v, want a refusal naming %s", err, cs.segs[0])
		}
	})
	t.Run("cut at the damage knowingly", func(t *testing.T) {
		// The documented recovery when no backup is newer: keep a copy,
		// cut the segment at the offset named, move later segments aside.
		cs := writeAndCrash(t, 10, 5*int64(len(testValue(0))+40))
		rec := cs.records[2]
		mutate(t, rec.seg, func(d []byte) []byte { d[rec.off+9] ^= 0xFF; return d })
		checkOutcome(t, cs.path, outcome{refuseFile: rec.seg, refuseOff: rec.off})
		mutate(t, rec.seg, func(d []byte) []byte { return d[:rec.off] })
		for _, s := range cs.segs {
			if s > rec.seg {
				if err := os.Rename(s, s+".damaged"); err != nil {
					t.Fatal(err)
				}
			}
		}
		checkOutcome(t, cs.path, outcome{keep: cs.keysBefore(2)})
	})
}
