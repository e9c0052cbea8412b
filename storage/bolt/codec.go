package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// On-disk records.
//
//	kv bucket:   key -> 0x00 | crc32c(rest) | uvarint createRev | uvarint modRev | value
//	log bucket:  8-byte big-endian revision -> 0xC5 | crc32c(event) | event record
//	event:       type byte | uvarint len(key) | key | uvarint createRev | body
//	  created:   value
//	  updated:   uvarint prevModRev | uvarint len(value) | value | prevValue
//	  deleted:   uvarint prevModRev | prevValue
//
// A deleted event's KV carries the last value with ModRevision set to the
// revision of the delete, as storage.Event documents.
//
// Records may leave the previous value out of updates and deletes (type
// byte | noPrevValue), halving the bytes of a pod's writes:
//
//	  updated:   uvarint prevModRev | value
//	  deleted:   uvarint prevModRev
//
// The write-ahead log always does: replay reads the previous value from
// the state before the event, bbolt's as of the checkpoint plus the events
// replayed before. The log bucket does when the previous revision is above
// the compaction point, so its own log entry is there to read it from;
// compaction, before it drops an entry, writes its value into the later
// entry that refers to it (compact.go).
//
// The checksum (little-endian CRC32C) catches a byte changed inside a value,
// which bbolt's page structure does not cover. Stores written before it have
// records without the marker byte (a kv record's first byte, the uvarint of
// a revision >= 1, is never 0x00; an event record starts with its type,
// 0-2): those stay readable, but only at revisions up to the one the store
// had when it first opened with checksums (meta "sumsince"), so a damaged
// marker cannot pass a new record off as an old unchecked one.

var errCorrupt = errors.New("bolt: corrupt record")

// ErrChecksum reports a stored record whose checksum does not match: the
// store file was changed outside bbolt.
var ErrChecksum = errors.New("stored record fails its checksum (the store file is damaged)")

const (
	kvMarker  = 0x00
	logMarker = 0xC5
)

// unseal verifies a sealed record and returns its body; a record without
// the marker is a legacy one, accepted by the caller's revision check.
func unseal(rec []byte, marker byte) (body []byte, legacy bool, err error) {
	if len(rec) == 0 || rec[0] != marker {
		return rec, true, nil
	}
	if len(rec) < 5 {
		return nil, false, errCorrupt
	}
	if crc32.Checksum(rec[5:], crcTable) != binary.LittleEndian.Uint32(rec[1:5]) {
		return nil, false, ErrChecksum
	}
	return rec[5:], false, nil
}

// errLegacy is returned for a record without a checksum at a revision
// written since checksums began.
func errLegacy(rev int64) error {
	return fmt.Errorf("%w: revision %d has no checksum but was written after checksums began", ErrChecksum, rev)
}

func revKey(rev int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(rev))
	return b[:]
}

// appendRevKey appends the log key of rev to buf.
func appendRevKey(buf []byte, rev int64) []byte {
	return binary.BigEndian.AppendUint64(buf, uint64(rev))
}

func keyRev(k []byte) int64 { return int64(binary.BigEndian.Uint64(k)) }

func encodeKV(buf []byte, createRev, modRev int64, value []byte) []byte {
	buf = append(buf[:0], kvMarker, 0, 0, 0, 0)
	buf = binary.AppendUvarint(buf, uint64(createRev))
	buf = binary.AppendUvarint(buf, uint64(modRev))
	buf = append(buf, value...)
	binary.LittleEndian.PutUint32(buf[1:5], crc32.Checksum(buf[5:], crcTable))
	return buf
}

// decodeKV parses and verifies a kv record; legacyUpTo is the last
// revision that may lack a checksum. The value aliases rec.
func decodeKV(key string, rec []byte, legacyUpTo int64) (storage.KeyValue, error) {
	body, legacy, err := unseal(rec, kvMarker)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("decode %s: %w", key, err)
	}
	r := reader{b: body}
	kv := storage.KeyValue{Key: key, CreateRevision: r.int(), ModRevision: r.int()}
	kv.Value = r.rest()
	if r.err == nil && legacy && kv.ModRevision > legacyUpTo {
		r.err = errLegacy(kv.ModRevision)
	}
	if r.err != nil {
		return storage.KeyValue{}, fmt.Errorf("decode %s: %w", key, r.err)
	}
	return kv, nil
}

// encodeLogEvent builds the log bucket record of ev, with the previous
// value when the log may no longer hold it: its revision is at or below
// compactRev.
func encodeLogEvent(buf []byte, ev *storage.Event, compactRev int64) []byte {
	buf = append(buf[:0], logMarker, 0, 0, 0, 0)
	if ev.PrevKV != nil && ev.PrevKV.ModRevision > compactRev {
		buf = appendEventNoPrev(buf, ev)
	} else {
		buf = appendEvent(buf, ev)
	}
	binary.LittleEndian.PutUint32(buf[1:5], crc32.Checksum(buf[5:], crcTable))
	return buf
}

// decodeLogRecord verifies and parses a log bucket record, as decodeKV;
// needsPrev says it left the previous value out.
func decodeLogRecord(rev int64, rec []byte, legacyUpTo int64) (ev storage.Event, needsPrev bool, err error) {
	body, legacy, err := unseal(rec, logMarker)
	if err == nil && legacy && rev > legacyUpTo {
		err = errLegacy(rev)
	}
	if err != nil {
		return storage.Event{}, false, fmt.Errorf("decode event %d: %w", rev, err)
	}
	return decodeAnyEvent(rev, body)
}

// readLogEvent parses the log bucket record of rev and fills in a
// previous value it left out. Values alias rec and the bucket's pages.
func readLogEvent(logB *bbolt.Bucket, rev int64, rec []byte, legacyUpTo int64) (storage.Event, error) {
	ev, needsPrev, err := decodeLogRecord(rev, rec, legacyUpTo)
	if err == nil && needsPrev {
		err = fillLogPrev(logB, &ev, legacyUpTo)
	}
	return ev, err
}

// fillLogPrev sets the previous value a log record left out (and a
// delete's value) from the log entry of the previous revision.
func fillLogPrev(logB *bbolt.Bucket, ev *storage.Event, legacyUpTo int64) error {
	rev, prevRev := ev.KV.ModRevision, ev.PrevKV.ModRevision
	prevRec := logB.Get(revKey(prevRev))
	if prevRec == nil {
		return fmt.Errorf("decode event %d: the log entry of its previous revision %d is missing: %w", rev, prevRev, errCorrupt)
	}
	prev, _, err := decodeLogRecord(prevRev, prevRec, legacyUpTo) // a create or update holds its value
	if err == nil && (prev.Type == storage.EventDeleted || prev.KV.Key != ev.KV.Key) {
		err = fmt.Errorf("decode event %d: its previous revision %d is not a value of %s: %w", rev, prevRev, ev.KV.Key, errCorrupt)
	}
	if err != nil {
		return err
	}
	ev.PrevKV.Value = prev.KV.Value
	if ev.Type == storage.EventDeleted {
		ev.KV.Value = prev.KV.Value
	}
	return nil
}

// cloneEventValues copies the values of an event read from the file, so
// that it outlives the transaction.
func cloneEventValues(ev *storage.Event) {
	ev.KV.Value = cloneBytes(ev.KV.Value)
	if ev.PrevKV == nil {
		return
	}
	prev := *ev.PrevKV
	if ev.Type == storage.EventDeleted {
		prev.Value = ev.KV.Value // the same bytes
	} else {
		prev.Value = cloneBytes(prev.Value)
	}
	ev.PrevKV = &prev
}

// noPrevValue marks an event record without the previous value.
const noPrevValue = 0x10

func encodeEvent(buf []byte, ev *storage.Event) []byte {
	return appendEvent(buf[:0], ev)
}

// appendEventNoPrev appends the event record of ev without the previous
// value (a create has none).
func appendEventNoPrev(buf []byte, ev *storage.Event) []byte {
	if ev.Type == storage.EventCreated {
		return appendEvent(buf, ev)
	}
	buf = append(buf, byte(ev.Type)|noPrevValue)
	buf = binary.AppendUvarint(buf, uint64(len(ev.KV.Key)))
	buf = append(buf, ev.KV.Key...)
	buf = binary.AppendUvarint(buf, uint64(ev.KV.CreateRevision))
	buf = binary.AppendUvarint(buf, uint64(ev.PrevKV.ModRevision))
	if ev.Type == storage.EventUpdated {
		buf = append(buf, ev.KV.Value...)
	}
	return buf
}

// decodeAnyEvent parses an event record: needsPrev says it left out the
// previous value (and, for a delete, the value), which the caller fills in.
// Other records parse as decodeEvent.
func decodeAnyEvent(rev int64, rec []byte) (ev storage.Event, needsPrev bool, err error) {
	if len(rec) == 0 || rec[0]&noPrevValue == 0 {
		ev, err = decodeEvent(rev, rec)
		return ev, false, err
	}
	r := reader{b: rec}
	typ := storage.EventType(r.byte() &^ noPrevValue)
	key := string(r.bytes(r.int()))
	ev = storage.Event{Type: typ, KV: storage.KeyValue{Key: key, CreateRevision: r.int(), ModRevision: rev}}
	ev.PrevKV = &storage.KeyValue{Key: key, CreateRevision: ev.KV.CreateRevision, ModRevision: r.int()}
	switch typ {
	case storage.EventUpdated:
		ev.KV.Value = r.rest()
	case storage.EventDeleted:
		if r.err == nil && len(r.b) != 0 {
			r.err = errCorrupt
		}
	default:
		r.err = errCorrupt
	}
	if r.err != nil {
		return storage.Event{}, false, fmt.Errorf("decode event %d: %w", rev, r.err)
	}
	return ev, true, nil
}

func appendEvent(buf []byte, ev *storage.Event) []byte {
	buf = append(buf, byte(ev.Type))
	buf = binary.AppendUvarint(buf, uint64(len(ev.KV.Key)))
	buf = append(buf, ev.KV.Key...)
	buf = binary.AppendUvarint(buf, uint64(ev.KV.CreateRevision))
	switch ev.Type {
	case storage.EventCreated:
		buf = append(buf, ev.KV.Value...)
	case storage.EventUpdated:
		buf = binary.AppendUvarint(buf, uint64(ev.PrevKV.ModRevision))
		buf = binary.AppendUvarint(buf, uint64(len(ev.KV.Value)))
		buf = append(buf, ev.KV.Value...)
		buf = append(buf, ev.PrevKV.Value...)
	case storage.EventDeleted:
		buf = binary.AppendUvarint(buf, uint64(ev.PrevKV.ModRevision))
		buf = append(buf, ev.PrevKV.Value...)
	}
	return buf
}

// eventSize is an upper bound of the encoded size of ev, sealed or not.
func eventSize(ev *storage.Event) int {
	n := 5 + 1 + 4*binary.MaxVarintLen64 + len(ev.KV.Key) + len(ev.KV.Value)
	if ev.PrevKV != nil {
		n += len(ev.PrevKV.Value)
	}
	return n
}

// decodeEvent parses the log record of revision rev. Keys are copied; values
// alias rec, so callers copy rec first when it lives in a bbolt page.
func decodeEvent(rev int64, rec []byte) (storage.Event, error) {
	r := reader{b: rec}
	typ := storage.EventType(r.byte())
	key := string(r.bytes(r.int()))
	ev := storage.Event{Type: typ, KV: storage.KeyValue{Key: key, CreateRevision: r.int(), ModRevision: rev}}
	switch typ {
	case storage.EventCreated:
		ev.KV.Value = r.rest()
	case storage.EventUpdated:
		prev := storage.KeyValue{Key: key, CreateRevision: ev.KV.CreateRevision, ModRevision: r.int()}
		ev.KV.Value = r.bytes(r.int())
		prev.Value = r.rest()
		ev.PrevKV = &prev
	case storage.EventDeleted:
		prev := storage.KeyValue{Key: key, CreateRevision: ev.KV.CreateRevision, ModRevision: r.int()}
		prev.Value = r.rest()
		ev.KV.Value = prev.Value
		ev.PrevKV = &prev
	default:
		r.err = errCorrupt
	}
	if r.err != nil {
		return storage.Event{}, fmt.Errorf("decode event %d: %w", rev, r.err)
	}
	return ev, nil
}

// reader walks a record; the first error sticks and zero values follow.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errCorrupt
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return int64(v)
}

func (r *reader) bytes(n int64) []byte {
	if r.err != nil || n < 0 || n > int64(len(r.b)) {
		r.err = errCorrupt
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	out := r.b
	r.b = nil
	return out
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
