package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/batchlet/batchlet/storage"
)

// On-disk records.
//
//	kv bucket:   key -> uvarint createRev | uvarint modRev | value
//	log bucket:  8-byte big-endian revision -> event record
//	event:       type byte | uvarint len(key) | key | uvarint createRev | body
//	  created:   value
//	  updated:   uvarint prevModRev | uvarint len(value) | value | prevValue
//	  deleted:   uvarint prevModRev | prevValue
//
// A deleted event's KV carries the last value with ModRevision set to the
// revision of the delete, as storage.Event documents.

var errCorrupt = errors.New("bolt: corrupt record")

func revKey(rev int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(rev))
	return b[:]
}

func keyRev(k []byte) int64 { return int64(binary.BigEndian.Uint64(k)) }

func encodeKV(buf []byte, createRev, modRev int64, value []byte) []byte {
	buf = binary.AppendUvarint(buf[:0], uint64(createRev))
	buf = binary.AppendUvarint(buf, uint64(modRev))
	return append(buf, value...)
}

// decodeKV parses a kv record. The value aliases rec.
func decodeKV(key string, rec []byte) (storage.KeyValue, error) {
	r := reader{b: rec}
	kv := storage.KeyValue{Key: key, CreateRevision: r.int(), ModRevision: r.int()}
	kv.Value = r.rest()
	if r.err != nil {
		return storage.KeyValue{}, fmt.Errorf("decode %s: %w", key, r.err)
	}
	return kv, nil
}

func encodeEvent(buf []byte, ev *storage.Event) []byte {
	buf = append(buf[:0], byte(ev.Type))
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

// eventSize is an upper bound of the encoded size of ev.
func eventSize(ev *storage.Event) int {
	n := 1 + 4*binary.MaxVarintLen64 + len(ev.KV.Key) + len(ev.KV.Value)
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
