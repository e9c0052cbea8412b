package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// DamagedError reports a store file that cannot be opened safely.
type DamagedError struct {
	File   string
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s; the server refuses to start on it "+
		"(restore it from a backup, see docs/reliability.md)", e.File, e.Reason)
}

// bbolt's file layout, read before bbolt maps the file: a truncated file
// would otherwise fault (SIGBUS) on first access past its end.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64 // through the checksum
	metaSumOffset  = 56 // the checksum covers the bytes before it
)

type boltMeta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	pgid     uint64 // high water mark: pages in use
	txid     uint64
}

// preflight checks the store file before bbolt opens it. A missing or empty
// file is only a new store when nothing says a store existed: mustExist
// (the caller knows it did) or WAL segments holding data.
func preflight(path string, mustExist bool, segs []string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0):
		state := "missing"
		if err == nil {
			state = "empty"
		}
		if mustExist {
			return &DamagedError{File: path, Reason: "the file is " + state + " but the data dir belongs to an existing cluster"}
		}
		if seg := firstNonEmpty(segs); seg != "" {
			return &DamagedError{File: path, Reason: fmt.Sprintf("the file is %s but its write-ahead log %s holds writes", state, seg)}
		}
		return nil
	case err != nil:
		return fmt.Errorf("stat store %s: %w", path, err)
	}
	m, err := readMeta(path)
	if err != nil {
		return &DamagedError{File: path, Reason: err.Error()}
	}
	if need := int64(m.pgid) * int64(m.pageSize); info.Size() < need {
		return &DamagedError{File: path, Reason: fmt.Sprintf("the file is %d bytes but its header says %d (%d pages of %d): it was truncated",
			info.Size(), need, m.pgid, m.pageSize)}
	}
	if err := checkPages(path, m); err != nil {
		return &DamagedError{File: path, Reason: "its page structure is inconsistent: " + err.Error()}
	}
	return nil
}

func firstNonEmpty(segs []string) string {
	for _, p := range segs {
		if info, err := os.Stat(p); err == nil && info.Size() > 0 {
			return p
		}
	}
	return ""
}

// readMeta returns the newest valid of the two meta pages, as bbolt picks.
func readMeta(path string) (boltMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return boltMeta{}, err
	}
	defer f.Close()
	m0, err0 := readMetaAt(f, 0)
	size := int64(4096)
	if err0 == nil {
		size = int64(m0.pageSize)
	}
	m1, err1 := readMetaAt(f, size)
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, fmt.Errorf("neither meta page is valid (page 0: %v; page 1: %v)", err0, err1)
	case err0 != nil:
		return m1, nil
	case err1 != nil || m0.txid >= m1.txid:
		return m0, nil
	}
	return m1, nil
}

func readMetaAt(f *os.File, off int64) (boltMeta, error) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(buf, off); err != nil {
		if errors.Is(err, io.EOF) {
			return boltMeta{}, errors.New("the file ends before it")
		}
		return boltMeta{}, err
	}
	meta := buf[pageHeaderSize:]
	le := binary.LittleEndian
	h := fnv.New64a()
	_, _ = h.Write(meta[:metaSumOffset])
	switch {
	case le.Uint32(meta) != boltMagic:
		return boltMeta{}, errors.New("not a bbolt meta page (bad magic)")
	case le.Uint32(meta[4:]) != boltVersion:
		return boltMeta{}, fmt.Errorf("unsupported bbolt version %d", le.Uint32(meta[4:]))
	case h.Sum64() != le.Uint64(meta[metaSumOffset:]):
		return boltMeta{}, errors.New("meta checksum mismatch")
	}
	m := boltMeta{pageSize: le.Uint32(meta[8:]), root: le.Uint64(meta[16:]), pgid: le.Uint64(meta[40:]), txid: le.Uint64(meta[48:])}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("invalid page size %d", m.pageSize)
	}
	return m, nil
}

// verifyFile walks every bucket, key and value of the store read-only and
// checks each record's checksum, for at most budget. It runs before the
// writable open because bbolt rebuilds its free list on a goroutine of its
// own, where a damaged page would crash the process: here a damaged page
// panics (or faults) on this goroutine and becomes an error. It returns
// whether the walk finished.
func verifyFile(path string, opts Options) (finished bool, err error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: opts.OpenTimeout})
	if err != nil {
		return false, &DamagedError{File: path, Reason: err.Error()}
	}
	defer db.Close()
	deadline := opts.Clock.Now().Add(opts.VerifyBudget)
	err = guard(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			v := verifier{deadline: deadline, clock: opts.Clock}
			finished, err = v.walk(tx)
			return err
		})
	})
	var damaged *DamagedError
	if err != nil && !errors.As(err, &damaged) {
		err = &DamagedError{File: path, Reason: err.Error()}
	}
	return finished, err
}

// guard runs fn, turning a panic or a memory fault (a page past the end of
// the mapping) into a DamagedError naming the file.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{File: path, Reason: fmt.Sprintf("reading it failed: %v", r)}
		}
	}()
	return fn()
}

type verifier struct {
	deadline time.Time
	clock    interface{ Now() time.Time }
	n        int
	legacy   int64
}

func (v *verifier) walk(tx *bbolt.Tx) (bool, error) {
	meta := tx.Bucket(bucketMeta)
	v.legacy = 1<<63 - 1 // a store from before checksums: unmarked records are fine
	if meta != nil && meta.Get(metaSumSince) != nil {
		v.legacy = readInt(meta, metaSumSince)
	}
	found := 0
	for _, name := range [][]byte{bucketKV, bucketLog, bucketMeta} {
		if tx.Bucket(name) != nil {
			found++
		}
	}
	if found != 0 && found != 3 { // a store has all three, a new file none
		return false, fmt.Errorf("%d of the buckets kv, log and meta are readable: %w", found, errCorrupt)
	}
	var counts [2]int64
	var lastLog int64
	for i, name := range [][]byte{bucketKV, bucketLog} {
		bkt := tx.Bucket(name)
		if bkt == nil {
			continue
		}
		c := bkt.Cursor()
		for k, val := c.First(); k != nil; k, val = c.Next() {
			if err := v.check(name, k, val); err != nil {
				return false, err
			}
			if i == 1 { // the log: contiguous revisions up to the store's
				if rev := keyRev(k); lastLog != 0 && rev != lastLog+1 {
					return false, fmt.Errorf("the log jumps from revision %d to %d: %w", lastLog, rev, errCorrupt)
				}
				lastLog = keyRev(k)
			}
			counts[i]++
			if v.n++; v.n%1024 == 0 && v.clock.Now().After(v.deadline) {
				return false, nil
			}
		}
	}
	if meta == nil {
		return true, nil
	}
	if rev := readInt(meta, metaRev); counts[1] > 0 && lastLog != rev {
		return false, fmt.Errorf("the log ends at revision %d but the store is at %d: %w", lastLog, rev, errCorrupt)
	}
	if want := meta.Get(metaKeys); want != nil && readInt(meta, metaKeys) != counts[0] {
		return false, fmt.Errorf("the kv bucket holds %d keys but the store recorded %d: %w", counts[0], readInt(meta, metaKeys), errCorrupt)
	}
	return true, nil
}

func (v *verifier) check(bucket, k, val []byte) error {
	var err error
	switch string(bucket) {
	case string(bucketKV):
		_, err = decodeKV(string(k), val, v.legacy)
	case string(bucketLog):
		if len(k) != 8 {
			return fmt.Errorf("log key %x is not a revision: %w", k, errCorrupt)
		}
		_, _, err = decodeLogRecord(keyRev(k), val, v.legacy)
	}
	return err
}
