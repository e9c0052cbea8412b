package bolt

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// A WAL segment written into fallocated space costs every fdatasync more
// than the data: each append lands in unwritten extents (converted, and the
// extent tree written, on writeback) and grows the file (the inode written).
// A segment whose zeros were really written and synced beforehand takes
// appends as plain overwrites: fdatasync flushes the data blocks and nothing
// else. Such a "spare" is prepared in the background, off the commit path:
// preferably by recycling a checkpointed segment (rezeroing only what it
// used, as PostgreSQL and RocksDB recycle logs), else from scratch once the
// current segment is half full. rotate renames the spare into place; without
// one it falls back to a fallocated segment, as before.
//
// The spare lives under a name that is not a segment's (<db>.wal.spare, and
// <db>.wal.spare.tmp while it is prepared), so a crash at any point leaves no
// half-zeroed file where replay looks: a segment being recycled is renamed
// away (and the directory synced) before its first byte is cleared. Replay
// needs nothing new: zeros after the last record are the clean end of the
// log, as they always were (walreplay.go).

// spareState is the spare segment's state, under wal.mu.
type spareState struct {
	ready    bool // sparePath holds a zero-filled, synced segment
	busy     bool // a goroutine is preparing one
	stopped  bool // the WAL is closing: prepare no more
	requests int  // spares prepared (from scratch or recycled), for tests
	recycled int  // of them from released segments
}

// spareEarly is how much a run writes into its first (fallocated) segment
// before it zeroes a spare to move onto.
const spareEarly = 8 << 20

// zeroChunk is how much of a spare one write clears.
const zeroChunk = 256 << 10

// spareTailScan bounds how many trailing zero bytes of a record's payload
// replay tries when it checks a damaged length (recordAt).
const spareTailScan = 4096

func (w *wal) sparePath() string { return strings.TrimSuffix(w.prefix, "-") + ".spare" }
func (w *wal) spareTmp() string  { return w.sparePath() + ".tmp" }

// segmentLen is the length of a zero-filled segment, its size; the reserve
// deletes append into when the disk is full is preallocated past it, not
// zeroed (it is rarely written, and zeroing costs CPU per byte).
func (w *wal) segmentLen() int64 { return w.maxSize + w.reserve() }

func (w *wal) zeroLen() int64 { return w.maxSize }

// removeSpares deletes spare files a previous run left (they hold only
// zeros, or a segment's checkpointed records).
func (w *wal) removeSpares() error {
	var errs []error
	for _, p := range []string{w.spareTmp(), w.sparePath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove wal spare: %w", err))
		}
	}
	return errors.Join(errs...)
}

// wantSpare starts preparing a spare from src (a released segment, which
// it then owns) or, with src nil, from scratch, unless one is ready or
// being prepared. It reports whether it took src. Called with w.mu held.
// Without fdatasync (Options.NoSync) a spare saves nothing, and on a tmpfs
// data dir its zeros would be memory, so there are none (wal.noSpares).
func (w *wal) wantSpare(src *segment) bool {
	s := &w.spare
	if s.ready || s.busy || s.stopped || w.noSpares {
		return false
	}
	s.busy = true
	s.requests++
	if src != nil {
		s.recycled++
	}
	w.spareWG.Add(1)
	go w.prepareSpare(src)
	return true
}

// prepareSpare fills the spare and marks it ready; on failure it leaves no
// file behind and rotate falls back to a fallocated segment.
func (w *wal) prepareSpare(src *segment) {
	defer w.spareWG.Done()
	err := w.fillSpare(src)
	if err != nil {
		_ = os.Remove(w.spareTmp())
		if src != nil {
			_ = os.Remove(src.path) // released: it goes as it would have
		}
		w.log.Debug("could not prepare a zero-filled wal segment; the next one is fallocated", "err", err)
	}
	w.mu.Lock()
	w.spare.busy = false
	w.spare.ready = err == nil && !w.spare.stopped
	w.mu.Unlock()
}

// fillSpare makes spareTmp a zero-filled, synced segment (from src when
// given) and renames it to sparePath.
func (w *wal) fillSpare(src *segment) error {
	tmp := w.spareTmp()
	clearTo := w.zeroLen()
	if src != nil {
		if err := os.Rename(src.path, tmp); err != nil {
			return fmt.Errorf("recycle wal segment: %w", err)
		}
		// Durable before any byte is cleared: a crash must not leave a
		// half-cleared file under a segment's name.
		if err := syncDir(w.dir); err != nil {
			return err
		}
		if src.filled {
			clearTo = src.size // past it the segment still holds its zeros
		}
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create wal spare: %w", err)
	}
	err = w.writeZeros(f, clearTo)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close wal spare: %w", cerr)
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, w.sparePath()); err != nil {
		return fmt.Errorf("rename wal spare: %w", err)
	}
	return nil
}

// writeZeros writes zeros over f's first n bytes, sets its length to
// zeroLen, preallocates the reserve past it and syncs it. It stops early
// when the WAL closes.
func (w *wal) writeZeros(f *os.File, n int64) error {
	length := w.zeroLen()
	if info, err := f.Stat(); err != nil {
		return fmt.Errorf("stat wal spare: %w", err)
	} else if info.Size() != length {
		// From scratch, sized for other options, or grown into its
		// reserve: all of it.
		n = length
		if err := f.Truncate(length); err != nil {
			return fmt.Errorf("size wal spare: %w", err)
		}
	}
	zeros := make([]byte, min(zeroChunk, n))
	for off := int64(0); off < n; off += int64(len(zeros)) {
		if w.spareStopped() {
			return errors.New("the write-ahead log is closing")
		}
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), n-off)], off); err != nil {
			return fmt.Errorf("zero wal spare: %w", err)
		}
	}
	if err := preallocate(f, w.segmentLen()); err != nil {
		return fmt.Errorf("preallocate wal spare reserve: %w", err)
	}
	if w.noSync {
		return nil
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("sync wal spare: %w", err)
	}
	return nil
}

func (w *wal) spareStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spare.stopped
}

// takeSpare renames the ready spare to name (never over an existing file)
// and opens it for appending; ok false when there is none.
func (w *wal) takeSpare(name string) (f *os.File, ok bool) {
	w.mu.Lock()
	ready := w.spare.ready
	w.spare.ready = false
	w.mu.Unlock()
	if !ready {
		return nil, false
	}
	spare := w.sparePath()
	if err := os.Link(spare, name); err != nil {
		_ = os.Remove(spare)
		return nil, false
	}
	_ = os.Remove(spare)
	f, err := os.OpenFile(name, os.O_WRONLY, 0o600)
	if err != nil {
		_ = os.Remove(name)
		return nil, false
	}
	return f, true
}

// stopSpares stops preparing spares, waits for a preparation under way
// and removes the spare files.
func (w *wal) stopSpares() error {
	w.haltSpares()
	return w.removeSpares()
}

// haltSpares stops preparing spares and waits for a preparation under way.
func (w *wal) haltSpares() {
	w.mu.Lock()
	w.spare.stopped = true
	w.spare.ready = false
	w.mu.Unlock()
	w.spareWG.Wait()
}
