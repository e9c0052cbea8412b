// Package bolt is the durable storage.Backend on a single bbolt file. Writes
// are group-committed: one writer goroutine applies every queued write in a
// single transaction (one fsync) and answers each caller after the commit.
// A revision log kept in the file feeds watches, also across restarts, and
// lets List read the state as of a recent revision.
package bolt

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
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
)

// Options tune a Backend. The zero value picks the defaults.
type Options struct {
	// HistoryWindow is how many recent events the in-memory watch history
	// keeps (default 10,000). It is loaded from the log on Open.
	HistoryWindow int
	// MaxBatch caps the writes committed in one transaction (default 1,024).
	MaxBatch int
	// CompactInterval is how often the background compactor runs; 0 picks
	// 1 minute, a negative value disables it.
	CompactInterval time.Duration
	// KeepRevisions is how many revisions of log the compactor keeps
	// (default 10,000).
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
	// NoSync skips fsync (tests and benchmarks of the non-durable path only).
	NoSync bool
}

func (o Options) withDefaults() Options {
	if o.HistoryWindow <= 0 {
		o.HistoryWindow = 10_000
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.CompactInterval == 0 {
		o.CompactInterval = time.Minute
	}
	if o.KeepRevisions <= 0 {
		o.KeepRevisions = 10_000
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = 10 * time.Second
	}
	return o
}

// Backend is the bbolt storage.Backend. Create it with Open.
type Backend struct {
	db   *bbolt.DB
	opts Options
	hub  *watchhub.Hub

	rev        atomic.Int64 // latest committed revision
	compactRev atomic.Int64

	closeMu sync.RWMutex // held shared while enqueueing a write
	closed  bool
	reqs    chan *request
	writerD chan struct{} // closed when the writer has exited
	stopC   chan struct{} // closes the compactor
	compD   chan struct{} // closed when the compactor has exited
	compMu  sync.Mutex    // serialises compactions

	stats counters
}

var _ storage.Backend = (*Backend)(nil)

// Open opens (or creates) the store at path, restores the revision counters
// and loads the tail of the log into the watch history.
func Open(path string, opts Options) (*Backend, error) {
	opts = opts.withDefaults()
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
	b := &Backend{
		db:      db,
		opts:    opts,
		reqs:    make(chan *request, 4*opts.MaxBatch),
		writerD: make(chan struct{}),
		stopC:   make(chan struct{}),
		compD:   make(chan struct{}),
	}
	if err := b.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	go b.writer()
	if opts.CompactInterval > 0 {
		go b.compactor()
	} else {
		close(b.compD)
	}
	return b, nil
}

// load creates the buckets, reads the counters and fills the watch history.
func (b *Backend) load() error {
	var tail []storage.Event
	err := b.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketKV, bucketLog, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		b.rev.Store(readInt(meta, metaRev))
		b.compactRev.Store(readInt(meta, metaCompct))
		var err error
		tail, err = readTail(tx.Bucket(bucketLog), b.opts.HistoryWindow)
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
func readTail(logB *bbolt.Bucket, n int) ([]storage.Event, error) {
	var rev []storage.Event
	c := logB.Cursor()
	for k, v := c.Last(); k != nil && len(rev) < n; k, v = c.Prev() {
		ev, err := decodeEvent(keyRev(k), cloneBytes(v))
		if err != nil {
			return nil, err
		}
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
	close(b.stopC)
	b.closeMu.Unlock()
	<-b.writerD
	<-b.compD
	b.hub.Close()
	b.compMu.Lock()
	defer b.compMu.Unlock()
	if err := b.db.Close(); err != nil {
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
	if errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		return storage.ErrClosed
	}
	return err
}
