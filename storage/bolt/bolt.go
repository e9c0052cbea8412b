// Package bolt is the durable storage.Backend on a bbolt file. Writes are
// group-committed: one writer goroutine checks every queued write against
// the current state and appends the whole batch to a write-ahead log; one
// fdatasync makes it durable, and only then is it visible and each caller
// answered, while the writer already stages the next batch (pipeline.go). A checkpointer moves batches
// of WAL-durable writes into bbolt (a synced commit, so the file is always
// consistent) and drops the WAL segments they cover. A revision log kept in
// the file feeds watches, also across restarts, and lets List read the
// state as of a recent revision.
package bolt

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/watchhub"
)

var (
	bucketKV   = []byte("kv")
	bucketLog  = []byte("log")
	bucketMeta = []byte("meta")
	metaRev    = []byte("rev")
	metaCompct = []byte("compact")
	// metaWALOpen holds the first WAL segment of a run that has not been
	// closed cleanly; Open refuses when no segment from it on exists.
	metaWALOpen = []byte("walopen")
	// metaSumSince is the revision the store had when it first opened with
	// record checksums; records above it must carry one.
	metaSumSince = []byte("sumsince")
	// metaKeys counts the keys of the kv bucket, so that a leaf page that
	// lost elements (structurally still valid) is noticed at open.
	metaKeys = []byte("keys")
)

// Options tune a Backend. The zero value picks the defaults.
type Options struct {
	// HistoryWindow is how many recent events the in-memory watch history
	// keeps (default 10,000). It is loaded from the log on Open.
	HistoryWindow int
	// MaxBatch caps the writes committed with one fdatasync (default 1,024).
	MaxBatch int
	// CheckpointInterval is the least time between two checkpoints into
	// bbolt (default 100ms).
	CheckpointInterval time.Duration
	// MaxPending is how many WAL-durable writes may await a checkpoint
	// before writers wait (default 100,000).
	MaxPending int
	// WALSegmentSize is the size at which a WAL segment is closed and a new
	// one started (default 64 MiB).
	WALSegmentSize int64
	// CompactInterval is how often the background compactor runs; 0 picks
	// 10 seconds, a negative value disables it. It is the store's only
	// compaction: the API server leaves history to the backend (package
	// storage). The log holds each update's
	// new and previous value, so at thousands of writes a second a minute
	// of log is gigabytes of file (all of it mapped into memory).
	CompactInterval time.Duration
	// KeepRevisions is how many revisions of log the compactor keeps
	// (default 50,000). Watches older than HistoryWindow but within this
	// window are replayed from the file.
	KeepRevisions int64
	// Retention, when positive, additionally compacts revisions older than
	// this, as sampled by the compactor at each run.
	Retention time.Duration
	// Clock drives the compactor; default the real clock.
	Clock clock.WithTicker
	// OpenTimeout bounds waiting for the file lock (default 10s).
	OpenTimeout time.Duration
	// Logger reports background failures; default slog.Default().
	Logger *slog.Logger
	// MustExist says the store existed before (the data dir has its
	// credentials): a missing or empty file is then an error instead of a
	// new, blank store.
	MustExist bool
	// VerifyBudget bounds the read-only walk that checks every record's
	// checksum (and, by reading every page, the file's structure) before
	// the store opens (default 30s; negative skips it). A walk that runs
	// out of time is logged and the open goes on.
	VerifyBudget time.Duration
	// NoSync skips every fsync: writes survive a crash of the process but
	// not of the machine. For tests only.
	NoSync bool
}

func (o Options) withDefaults() Options {
	if o.HistoryWindow <= 0 {
		o.HistoryWindow = 10_000
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 100 * time.Millisecond
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 100_000
	}
	if o.WALSegmentSize <= 0 {
		o.WALSegmentSize = 64 << 20
	}
	if o.CompactInterval == 0 {
		o.CompactInterval = 10 * time.Second
	}
	if o.KeepRevisions <= 0 {
		o.KeepRevisions = 50_000
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.VerifyBudget == 0 {
		o.VerifyBudget = 30 * time.Second
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = 10 * time.Second
	}
	return o
}

// Backend is the bbolt storage.Backend. Create it with Open.
type Backend struct {
	db   *bbolt.DB
	path string
	opts Options
	hub  *watchhub.Hub

	rev        atomic.Int64 // latest WAL-durable revision
	compactRev atomic.Int64
	// legacyUpTo is the last revision whose records may lack a checksum
	// (written before checksums); set on Open.
	legacyUpTo int64

	mu   sync.RWMutex // guards ov; held shared across a read snapshot
	ov   *overlay
	room *sync.Cond // on mu: a checkpoint made room for pending writes

	wal      *wal
	walErrMu sync.Mutex
	walErr   error // sticky: set by the writer when an append failed for good
	space    spaceState

	closeMu sync.RWMutex // held shared while enqueueing a write
	closed  bool
	reqs    chan *request
	writerD chan struct{} // closed when the writer has exited
	stopC   chan struct{} // stops the compactor and the checkpointer
	compD   chan struct{} // closed when the compactor has exited
	ckptC   chan struct{} // wakes the checkpointer
	ckptD   chan struct{} // closed when the checkpointer has exited
	compMu  sync.Mutex    // serialises compactions
	ckptMu  sync.Mutex    // serialises checkpoints
	arena   recordArena   // the records of a checkpoint; under ckptMu

	stats counters
}

var _ storage.Backend = (*Backend)(nil)

// Open opens (or creates) the store at path, restores the revision counters
// and loads the tail of the log into the watch history. A damaged store is
// an error naming the file (*DamagedError, *WALDamageError), never a panic.
func Open(path string, opts Options) (*Backend, error) {
	opts = opts.withDefaults()
	segs, err := listSegments(segmentPrefix(path))
	if err != nil {
		return nil, err
	}
	if err := preflight(path, opts.MustExist, segs); err != nil {
		return nil, err
	}
	if info, err := os.Stat(path); err == nil && info.Size() > 0 && opts.VerifyBudget > 0 {
		start := opts.Clock.Now()
		finished, err := verifyFile(path, opts)
		if err != nil {
			return nil, err
		}
		if !finished {
			opts.Logger.Warn("store check ran out of time; the rest of the file is checked as it is read",
				"file", path, "budget", opts.VerifyBudget)
		} else {
			opts.Logger.Debug("store checked", "file", path, "took", opts.Clock.Since(start))
		}
	}
	var b *Backend
	err = guard(path, func() error {
		var err error
		b, err = open(path, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// open is Open past the checks; a panic in it is turned into an error by
// the caller.
func open(path string, opts Options) (b *Backend, err error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:         opts.OpenTimeout,
		NoFreelistSync:  true,
		FreelistType:    bbolt.FreelistMapType,
		NoSync:          opts.NoSync,
		InitialMmapSize: 64 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			_ = db.Close()
			panic(r)
		}
	}()
	b = &Backend{
		db:      db,
		path:    path,
		opts:    opts,
		reqs:    make(chan *request, 4*opts.MaxBatch),
		writerD: make(chan struct{}),
		stopC:   make(chan struct{}),
		compD:   make(chan struct{}),
		ckptC:   make(chan struct{}, 1),
		ckptD:   make(chan struct{}),
		ov:      newOverlay(),
	}
	b.room = sync.NewCond(&b.mu)
	if err := b.recover(path); err != nil {
		if b.wal != nil {
			_ = b.wal.f.Close()
			_ = b.wal.stopSpares()
		}
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	go b.writer()
	go b.checkpointer()
	if opts.CompactInterval > 0 {
		go b.compactor()
	} else {
		close(b.compD)
	}
	return b, nil
}

// recover loads the store, replays the WAL into bbolt and starts a new WAL
// segment.
func (b *Backend) recover(path string) error {
	if err := b.load(); err != nil {
		return &DamagedError{File: path, Reason: err.Error()}
	}
	segs, err := listSegments(segmentPrefix(path))
	if err != nil {
		return err
	}
	if err := b.checkWALPresent(path, segs); err != nil {
		return err
	}
	records, torn, err := readSegments(segs, b.rev.Load())
	if err != nil {
		return err
	}
	replay, err := b.resolvePrevs(records)
	if err != nil {
		return err
	}
	if torn != nil {
		b.opts.Logger.Warn("write-ahead log ends with a torn record, the write a crash interrupted; dropping it",
			"file", torn.file, "offset", torn.offset, "bytes", torn.size)
	}
	if len(replay) > 0 {
		b.ov.install(replay)
		b.rev.Store(replay[len(replay)-1].KV.ModRevision)
		if err := b.checkpoint(); err != nil {
			return err
		}
	}
	if b.wal, err = openWAL(path, b.opts.WALSegmentSize, segs, b.rev.Load(), b.opts.NoSync, b.opts.Logger); err != nil {
		return err
	}
	if err := b.markWALOpen(int64(b.wal.seq)); err != nil {
		return err
	}
	if err := b.wal.release(b.rev.Load()); err != nil {
		return err
	}
	return b.loadHistory()
}

// checkWALPresent refuses a store whose last run did not close cleanly
// but whose log from that run on is gone: its writes after the last
// checkpoint would otherwise vanish without a word.
func (b *Backend) checkWALPresent(path string, segs []string) error {
	var first int64
	err := b.db.View(func(tx *bbolt.Tx) error {
		first = readInt(tx.Bucket(bucketMeta), metaWALOpen)
		return nil
	})
	if err != nil || first == 0 {
		return err
	}
	prefix := segmentPrefix(path)
	for _, p := range segs {
		if seqOf(prefix, p) >= int(first) {
			return nil
		}
	}
	return fmt.Errorf("write-ahead log missing: the store was not closed cleanly and its log continues in %s%08d, "+
		"which does not exist; writes acknowledged after the last checkpoint would be lost, so the store refuses "+
		"to start (restore the segment or a backup, see docs/reliability.md)", prefix, first)
}

// markWALOpen records the first segment of this run (seq 0: closed cleanly).
func (b *Backend) markWALOpen(seq int64) error {
	err := b.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if seq == 0 {
			return meta.Delete(metaWALOpen)
		}
		return meta.Put(metaWALOpen, revKey(seq))
	})
	if err != nil {
		return fmt.Errorf("record the write-ahead log state: %w", mapErr(err))
	}
	return nil
}

// load creates the buckets and reads the counters.
func (b *Backend) load() error {
	err := b.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketKV, bucketLog, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		b.rev.Store(readInt(meta, metaRev))
		b.compactRev.Store(readInt(meta, metaCompct))
		if meta.Get(metaSumSince) == nil {
			// First open with checksums: every record from here on has one.
			if err := meta.Put(metaSumSince, revKey(b.rev.Load())); err != nil {
				return fmt.Errorf("record checksum start: %w", err)
			}
		}
		b.legacyUpTo = readInt(meta, metaSumSince)
		if meta.Get(metaKeys) == nil {
			if err := meta.Put(metaKeys, revKey(int64(tx.Bucket(bucketKV).Stats().KeyN))); err != nil {
				return fmt.Errorf("record key count: %w", err)
			}
		}
		return nil
	})
	return err
}

// loadHistory fills the watch history from the tail of the log.
func (b *Backend) loadHistory() error {
	var tail []storage.Event
	err := b.db.View(func(tx *bbolt.Tx) error {
		var err error
		tail, err = readTail(tx.Bucket(bucketLog), b.opts.HistoryWindow, b.legacyUpTo)
		return err
	})
	if err != nil {
		return err
	}
	b.hub = watchhub.NewAt(b.opts.HistoryWindow, b.rev.Load())
	b.hub.Publish(tail)
	return nil
}

// readTail returns the last n events of the log in ascending order, copied
// out of the file.
func readTail(logB *bbolt.Bucket, n int, legacyUpTo int64) ([]storage.Event, error) {
	var rev []storage.Event
	c := logB.Cursor()
	for k, v := c.Last(); k != nil && len(rev) < n; k, v = c.Prev() {
		ev, err := readLogEvent(logB, keyRev(k), v, legacyUpTo)
		if err != nil {
			return nil, err
		}
		cloneEventValues(&ev)
		rev = append(rev, ev)
	}
	out := make([]storage.Event, len(rev))
	for i, ev := range rev {
		out[len(rev)-1-i] = ev
	}
	// The history must be contiguous for watches to trust it.
	for i := len(out) - 1; i > 0; i-- {
		if out[i-1].KV.ModRevision != out[i].KV.ModRevision-1 {
			return out[i:], nil
		}
	}
	return out, nil
}

func readInt(bkt *bbolt.Bucket, key []byte) int64 {
	v := bkt.Get(key)
	if len(v) != 8 {
		return 0
	}
	return keyRev(v)
}

// CurrentRevision is the revision of the latest committed write.
func (b *Backend) CurrentRevision() int64 { return b.rev.Load() }

// CompactRevision is the oldest revision a Watch or List can start after.
func (b *Backend) CompactRevision() int64 { return b.compactRev.Load() }

// Close waits for queued writes to commit, stops the compactor, closes every
// watch and the file. Later calls fail with storage.ErrClosed.
func (b *Backend) Close() error {
	b.closeMu.Lock()
	if b.closed {
		b.closeMu.Unlock()
		return nil
	}
	b.closed = true
	close(b.reqs)
	b.closeMu.Unlock()
	<-b.writerD
	close(b.stopC)
	<-b.compD
	<-b.ckptD
	b.hub.Close()
	err := b.checkpoint()
	b.logStats()
	b.mu.RLock()
	checkpointed := b.rev.Load()
	if len(b.ov.pending) > 0 {
		checkpointed = -1 // keep the WAL: it has writes bbolt lacks
	}
	b.mu.RUnlock()
	if checkpointed >= 0 {
		// Marked clean before the segments go, so a crash in between
		// leaves segments that replay as already checkpointed.
		if merr := b.markWALOpen(0); merr != nil {
			err = errors.Join(err, merr)
			checkpointed = -1
		}
	}
	err = errors.Join(err, b.wal.close(checkpointed))
	b.compMu.Lock()
	defer b.compMu.Unlock()
	if cerr := b.db.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("close bolt store: %w", err)
	}
	return nil
}

func (b *Backend) isClosed() bool {
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	return b.closed
}

// mapErr turns bbolt's closed-database error into storage.ErrClosed.
func mapErr(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return storage.ErrClosed
	}
	return err
}
