package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// sectorSize is the unit a torn write leaves unwritten (zero-filled) on a
// crash of the machine, as etcd's WAL assumes.
const sectorSize = 512

// WALDamageError reports a write-ahead log that is damaged where a crash
// cannot have torn it: replaying past the damage is impossible and dropping
// what follows would lose acknowledged writes, so Open refuses.
type WALDamageError struct {
	File   string // the segment file
	Offset int64  // where the damaged record starts
	Reason string
}

func (e *WALDamageError) Error() string {
	return fmt.Sprintf("write-ahead log %s is damaged at offset %d: %s; it may hold acknowledged writes, "+
		"so the store refuses to start rather than drop them (restore a backup, or move the segment aside "+
		"knowingly, see docs/reliability.md)", e.File, e.Offset, e.Reason)
}

// tornTail is the half-written last record a crash left, which replay drops.
type tornTail struct {
	file   string
	offset int64
	size   int64
}

// listSegments returns the existing segment files in order. Only names
// ending in digits are segments, so a segment renamed aside
// (state.db.wal-00000001.damaged) is not replayed.
func listSegments(prefix string) ([]string, error) {
	matches, err := filepath.Glob(prefix + "*")
	if err != nil {
		return nil, fmt.Errorf("list wal segments: %w", err)
	}
	var out []string
	for _, p := range matches {
		if seqOf(prefix, p) > 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return seqOf(prefix, out[i]) < seqOf(prefix, out[j]) })
	return out, nil
}

// seqOf is the sequence number of a segment file, 0 if p is not one.
func seqOf(prefix, p string) int {
	suffix := strings.TrimPrefix(p, prefix)
	for _, c := range suffix {
		if c < '0' || c > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(suffix)
	if err != nil {
		return 0
	}
	return n
}

// readSegments returns the events of every segment with a revision above
// after, in order. A torn last record is dropped and reported; damage
// anywhere else, or a gap in the revisions, is a *WALDamageError.
func readSegments(paths []string, after int64) ([]walEvent, *tornTail, error) {
	r := replayer{next: after + 1}
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read wal segment %s: %w", p, err)
		}
		if err := r.segment(p, data, paths[i+1:]); err != nil {
			return nil, nil, err
		}
	}
	return r.out, r.torn, nil
}

type replayer struct {
	out  []walEvent
	next int64
	torn *tornTail
}

// segment replays one segment; later are the segments after it.
func (r *replayer) segment(path string, data []byte, later []string) error {
	for off := 0; off < len(data); {
		payload, reason, torn := recordAt(data, off)
		if reason == "" {
			evs, err := decodePayload(payload)
			if err != nil {
				return &WALDamageError{File: path, Offset: int64(off), Reason: "a record with a valid checksum does not decode: " + err.Error()}
			}
			if err := r.add(path, int64(off), evs); err != nil {
				return err
			}
			off += 8 + len(payload)
			continue
		}
		if isZero(data[off:]) {
			return nil // zero fill after the last record
		}
		if !torn {
			return &WALDamageError{File: path, Offset: int64(off), Reason: reason}
		}
		if at, file, ok := validRecordAfter(data, off, later); ok {
			if file == "" {
				file = path
			}
			return &WALDamageError{File: path, Offset: int64(off),
				Reason: fmt.Sprintf("%s, and a valid record follows in %s at offset %d", reason, filepath.Base(file), at)}
		}
		r.torn = &tornTail{file: path, offset: int64(off), size: int64(len(data) - off)}
		return nil
	}
	return nil
}

// add appends the record's events that bbolt lacks, refusing a gap.
func (r *replayer) add(path string, off int64, evs []walEvent) error {
	for _, ev := range evs {
		switch {
		case ev.KV.ModRevision < r.next:
			continue // already in bbolt
		case ev.KV.ModRevision > r.next:
			return &WALDamageError{File: path, Offset: off,
				Reason: fmt.Sprintf("the record holds revision %d where %d was expected (revisions are missing: a segment or the store file is from another point in time)", ev.KV.ModRevision, r.next)}
		}
		r.out = append(r.out, ev)
		r.next++
	}
	return nil
}

// recordAt parses the record at off. On failure it says why and whether a
// crash in the middle of writing this record, the last one, could explain
// it: the file ends inside the record, or a sector of it reads as zeros.
func recordAt(data []byte, off int) (payload []byte, reason string, torn bool) {
	rest := data[off:]
	if len(rest) < 8 {
		return nil, fmt.Sprintf("the file ends inside a record header (%d of 8 bytes)", len(rest)), true
	}
	n := int64(binary.LittleEndian.Uint32(rest))
	sum := binary.LittleEndian.Uint32(rest[4:])
	switch {
	case n == 0:
		return nil, "a record has length 0 and data follows it", false
	case n > int64(len(rest)-8):
		if crc32.Checksum(rest[8:], crcTable) == sum {
			return nil, fmt.Sprintf("the record length field says %d bytes but the %d bytes that follow carry the record's checksum (the length is damaged)", n, len(rest)-8), false
		}
		if m, ok := wholeBeforeZeros(rest[8:], sum); ok {
			return nil, lengthDamaged(n, m), false
		}
		return nil, fmt.Sprintf("the file ends inside a record (length %d, %d bytes present)", n, len(rest)-8), true
	}
	payload = rest[8 : 8+n]
	if crc32.Checksum(payload, crcTable) == sum {
		return payload, "", false
	}
	if !hasZeroSector(data, off, off+8+int(n)) {
		return nil, "record checksum mismatch", false
	}
	if m, ok := wholeBeforeZeros(payload, sum); ok {
		return nil, lengthDamaged(n, m), false
	}
	return nil, "record checksum mismatch", true
}

func lengthDamaged(n int64, m int) string {
	return fmt.Sprintf("the record length field says %d bytes but its first %d bytes, followed by zeros, carry the record's checksum (the length is damaged)", n, m)
}

// wholeBeforeZeros looks for a whole record at the start of body, the
// bytes a record's length claims (up to the file's end): its bytes up to
// the last nonzero one, and maybe a few zeros of its own, carry the
// record's checksum sum, and only zeros follow. In a zero-filled segment
// (walspare.go) a damaged length that reaches into the zeros past the end
// of the log would otherwise read as a torn write. It returns the length
// whose checksum matched.
func wholeBeforeZeros(body []byte, sum uint32) (int, bool) {
	end := len(body)
	for end > 0 && body[end-1] == 0 {
		end--
	}
	if end == 0 {
		return 0, false // nothing but zeros: a torn write
	}
	crc := crc32.Checksum(body[:end], crcTable)
	var zero [1]byte
	for m := end; m < len(body) && m <= end+spareTailScan; m++ {
		if crc == sum {
			return m, true
		}
		crc = crc32.Update(crc, crcTable, zero[:])
	}
	return 0, false
}

// hasZeroSector reports whether a whole sector of data[from:to], or the
// record's last chunk when it ends the file or only zeros follow it in its
// sector (a zero-filled segment, walspare.go), reads as zeros: that is how
// a torn write reads back after the machine crashed. (A short chunk at the
// start can be the zero high bytes of the length.)
func hasZeroSector(data []byte, from, to int) bool {
	for start := from; start < to; {
		sectorEnd := (start/sectorSize + 1) * sectorSize
		end := min(sectorEnd, to)
		whole := end-start == sectorSize
		last := end == to && end-start >= 8 && isZero(data[end:min(sectorEnd, len(data))])
		if (whole || last) && isZero(data[start:end]) {
			return true
		}
		start = end
	}
	return false
}

func isZero(b []byte) bool {
	for len(b) >= len(zeroSector) {
		if !bytes.Equal(b[:len(zeroSector)], zeroSector[:]) {
			return false
		}
		b = b[len(zeroSector):]
	}
	return bytes.Equal(b, zeroSector[:len(b)])
}

var zeroSector [sectorSize]byte

// validRecordAfter looks for an intact record after the bad one at off,
// at any offset of this segment and then in the later segments. A torn
// write is the last thing in the log: finding one proves damage.
func validRecordAfter(data []byte, off int, later []string) (int, string, bool) {
	if at, ok := scanForRecord(data, off+1); ok {
		return at, "", true
	}
	for _, p := range later {
		d, err := os.ReadFile(p)
		if err != nil {
			continue // reported when the segment itself is replayed
		}
		if at, ok := scanForRecord(d, 0); ok {
			return at, p, true
		}
	}
	return 0, "", false
}

// scanForRecord returns the first offset from start where a record with a
// valid checksum and decodable events begins.
func scanForRecord(data []byte, start int) (int, bool) {
	for k := start; k+8 <= len(data); k++ {
		n := int(binary.LittleEndian.Uint32(data[k:]))
		if n == 0 || n > len(data)-k-8 {
			continue
		}
		payload := data[k+8 : k+8+n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[k+4:]) {
			continue
		}
		if evs, err := decodePayload(payload); err == nil && len(evs) > 0 {
			return k, true
		}
	}
	return 0, false
}

// resolvePrevs fills in the previous values the log's records leave out,
// from the state each event applies to: bbolt's, as of the revision replay
// starts after, and the events replayed before it.
func (b *Backend) resolvePrevs(replay []walEvent) ([]storage.Event, error) {
	out := make([]storage.Event, len(replay))
	err := b.db.View(func(tx *bbolt.Tx) error {
		kvB := tx.Bucket(bucketKV)
		state := map[string]*storage.KeyValue{} // nil: deleted
		for i := range replay {
			ev := replay[i].Event
			if replay[i].needsPrev {
				if err := b.fillPrev(kvB, state, &ev); err != nil {
					return err
				}
			}
			out[i] = ev
			if ev.Type == storage.EventDeleted {
				state[ev.KV.Key] = nil
			} else {
				state[ev.KV.Key] = &out[i].KV
			}
		}
		return nil
	})
	return out, err
}

// fillPrev sets the previous value of ev (and a delete's value) from the
// key's state before it.
func (b *Backend) fillPrev(kvB *bbolt.Bucket, state map[string]*storage.KeyValue, ev *storage.Event) error {
	cur, known := state[ev.KV.Key]
	if !known {
		if rec := kvB.Get([]byte(ev.KV.Key)); rec != nil {
			kv, err := decodeKV(ev.KV.Key, cloneBytes(rec), b.legacyUpTo)
			if err != nil {
				return err
			}
			cur = &kv
		}
	}
	if cur == nil || cur.ModRevision != ev.PrevKV.ModRevision {
		held := "no value"
		if cur != nil {
			held = fmt.Sprintf("revision %d", cur.ModRevision)
		}
		return fmt.Errorf("the write-ahead log does not fit the store: revision %d changes %s from revision %d, but the store holds %s for it",
			ev.KV.ModRevision, ev.KV.Key, ev.PrevKV.ModRevision, held)
	}
	ev.PrevKV.Value = cur.Value
	if ev.Type == storage.EventDeleted {
		ev.KV.Value = cur.Value
	}
	return nil
}
