package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/batchlet/batchlet/storage"
)

// The write-ahead log makes a batch durable with one sequential append and
// one fdatasync; the bbolt file catches up in the background. It is a
// sequence of segment files <db>.wal-<seq>, each a sequence of records:
//
//	uint32 len(payload) | uint32 crc32c(payload) | payload
//	payload: repeated uvarint rev | uvarint len(event) | event record
//
// An event record leaves out the previous value (codec.go), which replay
// takes from the state it replays onto.
//
// Replay (walreplay.go) tells a torn tail, the one record a crash can leave
// half written at the end of the log, from damage anywhere else.

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// wal appends batches to the current segment and drops segments once their
// events are checkpointed into bbolt.
type wal struct {
	prefix  string // segment files are prefix + seq
	dir     string
	maxSize int64
	noSync  bool
	// noSpares: spares save nothing here (no fdatasync, or a filesystem in
	// memory, whose fdatasync is free and whose zeros would take memory).
	noSpares bool
	log      *slog.Logger
	// fsync makes a segment's appended records durable: fdatasync, or a
	// test's stand-in that blocks or fails.
	fsync func(*os.File) error

	// Only the writer goroutine touches these.
	f      *os.File
	seq    int
	size   int64
	filled bool // the current segment's zeros were written (walspare.go)
	buf    []byte
	rec    []byte // scratch for one encoded record
	curMax int64  // last revision in the current segment

	mu      sync.Mutex
	closed  []segment // full segments, oldest first
	spare   spareState
	spareWG sync.WaitGroup // the goroutine preparing a spare
}

type segment struct {
	path    string
	lastRev int64
	size    int64 // bytes of records in it
	filled  bool  // zero-filled to zeroLen before use
}

func segmentPrefix(dbPath string) string { return dbPath + ".wal-" }

// walEvent is a replayed event; needsPrev says its record left out the
// previous value (and, for a delete, the value).
type walEvent struct {
	storage.Event
	needsPrev bool
}

func decodePayload(p []byte) ([]walEvent, error) {
	var out []walEvent
	r := reader{b: p}
	for len(r.b) > 0 && r.err == nil {
		rev := r.int()
		rec := r.bytes(r.int())
		if r.err != nil {
			break
		}
		ev, needsPrev, err := decodeAnyEvent(rev, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, walEvent{Event: ev, needsPrev: needsPrev})
	}
	return out, r.err
}

// openWAL starts a fresh segment after the existing ones; the caller has
// recovered and checkpointed those, and removes them with release.
func openWAL(dbPath string, maxSize int64, existing []string, lastRev int64, noSync bool, log *slog.Logger) (*wal, error) {
	w := &wal{prefix: segmentPrefix(dbPath), dir: filepath.Dir(dbPath), maxSize: maxSize, noSync: noSync, log: log, fsync: fdatasync}
	w.noSpares = noSync || inMemoryFS(w.dir)
	if err := w.removeSpares(); err != nil {
		return nil, err
	}
	for _, p := range existing {
		w.closed = append(w.closed, segment{path: p, lastRev: lastRev})
		w.seq = max(w.seq, seqOf(w.prefix, p))
	}
	if err := w.rotate(); err != nil {
		return nil, err
	}
	return w, nil
}

// reserve is the room each segment keeps past maxSize: when the disk is
// full and no new segment can be made, deletes still append into it.
func (w *wal) reserve() int64 { return min(w.maxSize/2, 16<<20) }

// rotate starts the next segment, the zero-filled spare when one is ready
// (walspare.go) or else a new preallocated file, and then closes the
// current one (if any); if the new one cannot be made, the current one
// stays in use.
func (w *wal) rotate() error {
	name := fmt.Sprintf("%s%08d", w.prefix, w.seq+1)
	f, filled := w.takeSpare(name)
	if !filled {
		var err error
		if f, err = w.createSegment(name); err != nil {
			return err
		}
	}
	if err := syncDir(w.dir); err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return err
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			_ = f.Close()
			return fmt.Errorf("close wal segment: %w", err)
		}
		w.mu.Lock()
		w.closed = append(w.closed, w.current())
		w.mu.Unlock()
	}
	w.seq++
	w.f, w.size, w.filled = f, 0, filled
	return nil
}

// createSegment creates a segment file with its room preallocated.
func (w *wal) createSegment(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create wal segment: %w", err)
	}
	if err := preallocate(f, w.segmentLen()); err != nil && w.f != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return nil, fmt.Errorf("preallocate wal segment %s: %w", name, err)
	}
	return f, nil
}

// current describes the current segment as a closed one.
func (w *wal) current() segment {
	return segment{path: w.f.Name(), lastRev: w.curMax, size: w.size, filled: w.filled}
}

// full reports whether the current segment has reached its size, or is
// a fallocated one while a zero-filled spare is ready to replace it.
func (w *wal) full() bool {
	if w.size >= w.maxSize {
		return true
	}
	if w.filled || w.size < w.spareAfter() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spare.ready
}

// spareAfter is how much a segment holds before a spare is zeroed from
// scratch: a fallocated segment (the first of a run) is left early, a
// zero-filled one when half full; a run that writes little (a one-pod
// `batchlet run`) never zeroes one.
func (w *wal) spareAfter() int64 {
	if w.filled {
		return w.maxSize / 2
	}
	return min(w.maxSize/2, spareEarly)
}

// append writes the events as one record into the page cache; it is
// durable once an fdatasync of the segment that started after it returns
// (pipeline.go). The caller rotates full segments first, and only once
// every record of the current one is synced. A failed append is cut off
// again; rolledBack says whether that worked, so the log is as before.
func (w *wal) append(events []storage.Event) (rolledBack bool, err error) {
	buf := append(w.buf[:0], make([]byte, 8)...)
	for i := range events {
		ev := &events[i]
		buf = binary.AppendUvarint(buf, uint64(ev.KV.ModRevision))
		w.rec = appendEventNoPrev(w.rec[:0], ev) // one scratch record, reused
		buf = binary.AppendUvarint(buf, uint64(len(w.rec)))
		buf = append(buf, w.rec...)
	}
	payload := buf[8:]
	binary.LittleEndian.PutUint32(buf, uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(payload, crcTable))
	w.buf = buf
	if _, err := w.f.Write(buf); err != nil {
		return w.rollBack(), fmt.Errorf("append wal: %w", err)
	}
	w.size += int64(len(buf))
	w.curMax = events[len(events)-1].KV.ModRevision
	if w.size >= w.spareAfter() {
		// Nothing released to recycle yet: the next segment is needed
		// before long, so zero one from scratch.
		w.mu.Lock()
		w.wantSpare(nil)
		w.mu.Unlock()
	}
	return false, nil
}

// sync makes every record appended to f so far durable.
func (w *wal) sync(f *os.File) error {
	if w.noSync {
		return nil
	}
	if err := w.fsync(f); err != nil {
		return fmt.Errorf("sync wal: %w", err)
	}
	return nil
}

// rollBack cuts a failed record off the segment, so the next append
// follows the last good record (a torn record followed by good ones would
// read as damage on the next start).
func (w *wal) rollBack() bool {
	if cutRecords(w.f, w.size, int64(len(w.buf)), w.filled) != nil {
		return false
	}
	if _, err := w.f.Seek(w.size, io.SeekStart); err != nil {
		return false
	}
	return w.noSync || fdatasync(w.f) == nil
}

// cutRecords removes the n bytes of records at off from a segment: a
// zero-filled one gets its zeros back, keeping its length; another one is
// truncated there.
func cutRecords(f *os.File, off, n int64, filled bool) error {
	if filled {
		if _, err := f.WriteAt(make([]byte, n), off); err != nil {
			return fmt.Errorf("clear wal records: %w", err)
		}
		return nil
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("truncate wal: %w", err)
	}
	return nil
}

// release removes the full segments whose events are all at or below rev;
// the newest of them becomes the next spare when none is ready.
func (w *wal) release(rev int64) error {
	w.mu.Lock()
	var drop []segment
	for len(w.closed) > 0 && w.closed[0].lastRev <= rev {
		drop = append(drop, w.closed[0])
		w.closed = w.closed[1:]
	}
	if len(drop) > 0 && w.wantSpare(&drop[len(drop)-1]) {
		drop = drop[:len(drop)-1]
	}
	w.mu.Unlock()
	var errs []error
	for _, s := range drop {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove wal segment: %w", err))
		}
	}
	return errors.Join(errs...)
}

// close closes the current segment and, when everything is checkpointed,
// removes it too.
func (w *wal) close(checkpointed int64) error {
	err := errors.Join(w.f.Close(), w.stopSpares())
	if w.curMax <= checkpointed {
		w.mu.Lock()
		w.closed = append(w.closed, w.current())
		w.mu.Unlock()
		err = errors.Join(err, w.release(checkpointed))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
