package bolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

// TestWALSegmentsRecycled runs a store through many small segments with
// checkpoints in between, so released segments come back as zero-filled
// spares, and crashes it: every segment must end its records with zeros
// only (a recycled one holds none of its old records past the new end),
// and reopening finds exactly the acknowledged writes.
func TestWALSegmentsRecycled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	opts := Options{CompactInterval: -1, WALSegmentSize: 8 << 10, Logger: quietLogger()}
	b, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]string{}
	const writes = 400
	for i := range writes {
		key := fmt.Sprintf("/k/%04d", i%150) // updates too: records of every kind
		value := testValue(i)
		if _, err := b.Update(ctx, key, []byte(value), 0); err == storage.ErrNotFound {
			_, err = b.Create(ctx, key, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		want[key] = value
		if i%10 == 9 {
			if err := b.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.wal.mu.Lock()
	recycled, filled := b.wal.spare.recycled, b.wal.filled
	b.wal.mu.Unlock()
	if recycled < 3 || !filled {
		t.Fatalf("%d segments recycled, current one zero-filled %v: want several, and true", recycled, filled)
	}
	b.crash()

	segs, err := listSegments(segmentPrefix(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for off < len(data) {
			payload, reason, _ := recordAt(data, off)
			if reason != "" {
				break
			}
			off += 8 + len(payload)
		}
		if !isZero(data[off:]) {
			t.Fatalf("%s: bytes other than zeros after its last record at offset %d", filepath.Base(seg), off)
		}
	}
	b2, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if rev := b2.CurrentRevision(); rev != writes {
		t.Fatalf("revision %d after replay, want %d", rev, writes)
	}
	res, err := b2.List(ctx, "/k/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != len(want) {
		t.Fatalf("%d keys after replay, want %d", len(res.Items), len(want))
	}
	for _, kv := range res.Items {
		if string(kv.Value) != want[kv.Key] {
			t.Fatalf("%s = %q after replay, want %q", kv.Key, kv.Value, want[kv.Key])
		}
	}
}

// TestWALSpareFilesNotReplayed: a crash while a released segment was
// being recycled leaves it under a spare's name, records and all; they
// were checkpointed or, here, never acknowledged, and must not come back.
func TestWALSpareFilesNotReplayed(t *testing.T) {
	cs := writeAndCrash(t, 5, 1<<20)
	seg := cs.records[3].seg
	full, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	w := &wal{prefix: segmentPrefix(cs.path)}
	for _, p := range []string{w.spareTmp(), w.sparePath()} {
		if err := os.WriteFile(p, full, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mutate(t, seg, func(d []byte) []byte { return d[:cs.records[3].off] })
	keep := cs.keysBefore(3)
	checkOutcome(t, cs.path, outcome{keep: keep})
	b, err := Open(cs.path, Options{CompactInterval: -1, NoSync: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, r := range cs.records[3:] {
		for _, k := range r.keys {
			if _, err := b.Get(context.Background(), k); err != storage.ErrNotFound {
				t.Fatalf("%s, only in a spare file, came back: %v", k, err)
			}
		}
	}
	for _, p := range []string{w.spareTmp(), w.sparePath()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("spare file %s left after open: %v", filepath.Base(p), err)
		}
	}
}

// zeroFill pads a crashed segment with zeros, as a zero-filled segment
// reads after its last record.
func zeroFill(t *testing.T, seg string) {
	t.Helper()
	mutate(t, seg, func(d []byte) []byte { return append(d, make([]byte, 64<<10)...) })
}

func TestWALZeroFilledByteFlips(t *testing.T) {
	// As TestWALByteFlips, in a zero-filled segment: a changed length that
	// reaches into the zeros past the end is still damage, not a tear.
	at := map[string]func(r walRecord) int{
		"length low byte":  func(r walRecord) int { return r.off },
		"length high byte": func(r walRecord) int { return r.off + 3 },
		"checksum":         func(r walRecord) int { return r.off + 5 },
		"payload last":     func(r walRecord) int { return r.off + r.size - 1 },
	}
	for name, pos := range at {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			t.Run(fmt.Sprintf("%s/xor %#02x", name, mask), func(t *testing.T) {
				cs := writeAndCrash(t, 5, 1<<20)
				rec := cs.records[4]
				zeroFill(t, rec.seg)
				mutate(t, rec.seg, func(d []byte) []byte { d[pos(rec)] ^= mask; return d })
				checkOutcome(t, cs.path, outcome{refuseFile: rec.seg, refuseOff: rec.off})
			})
		}
	}
}

func TestWALZeroFilledTornTail(t *testing.T) {
	// The last record's last sector was not written: it reads as zeros, as
	// the zero fill after it does. A tear: the records before it are kept.
	for n := 5; n < 20; n++ {
		cs := writeAndCrash(t, n, 1<<20)
		last := cs.records[n-1]
		boundary := (last.off/sectorSize + 1) * sectorSize
		if boundary < last.off+8 || last.off+last.size-boundary < 8 {
			continue // the record does not cross a sector boundary with a chunk on each side
		}
		zeroFill(t, last.seg)
		mutate(t, last.seg, func(d []byte) []byte { clear(d[boundary : last.off+last.size]); return d })
		checkOutcome(t, cs.path, outcome{keep: cs.keysBefore(n - 1)})
		return
	}
	t.Fatal("no record crossed a sector boundary")
}
