package genericstore

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Batches a streamed list's walk hands over: a small first one so that the
// answer starts at once, then larger ones.
const (
	firstStreamBatch = 128
	streamBatch      = 1024
)

// StreamList answers a list without limit or continue while the store is
// still being walked: the answer's first bytes leave after the first
// candidates instead of after all 10,000s of them. A goroutine walks the
// store (its read transaction lasts only the walk, never the sending) and
// queues the candidates; the handler writes them as they come, deciding
// the ones the entry cache could not. The list's revision is pinned before
// the walk, as the envelope that carries it goes first. An error means
// nothing was written: the caller answers with it; once the answer has
// started, failures are logged and the answer ends unclosed.
func (s *Store) StreamList(w http.ResponseWriter, r *http.Request, res *registry.Resource, namespace string, f *Filter, rv, rvMatch string) error {
	ctx := r.Context()
	opts, err := s.listOptions(ctx, "", rv, rvMatch)
	if err != nil {
		return err
	}
	sc, q, err := s.startStreamWalk(ctx, res, namespace, f, opts)
	if err != nil {
		return err
	}
	lw, err := newListWriter(res, metav1.ListMeta{ResourceVersion: strconv.FormatInt(sc.rev, 10)})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	batches, done, err := q.take()
	lw.begin(w, s.listBuffer(w))
	for {
		for _, batch := range batches {
			if err := sc.writeBatch(lw, batch); err != nil {
				// Too late for an error status: the answer ends unclosed,
				// which no client takes for a whole list.
				s.log.Error("stream list", "resource", res.Kind, "err", err)
				return nil
			}
			s.releaseStreamBatch(batch)
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			return nil // the client left; the walk ends by itself
		}
		batches, done, err = q.take()
	}
	if err != nil {
		s.log.Error("stream list", "resource", res.Kind, "err", err)
		return nil
	}
	s.releaseListBuffer(lw.end())
	return nil
}

// startStreamWalk starts walking the store into a queue at opts' revision,
// or, when the request names none, at the current one: a store that keeps
// no history (memory) refuses a revision a concurrent write has passed, so
// a revision of the server's own choosing is chosen again then, as often as
// writes overtake it, up to a few times. It returns once the walk's first
// batch is queued or the walk failed (an error answer, nothing written).
func (s *Store) startStreamWalk(ctx context.Context, res *registry.Resource, namespace string, f *Filter, opts storage.ListOptions) (*listScan, *candidateQueue, error) {
	const attempts = 5
	ours := opts.Revision == 0
	for attempt := 1; ; attempt++ {
		if ours {
			opts.Revision = s.store.CurrentRevision()
		}
		sc := newListScan(s, res, f, 0, true)
		sc.rev = opts.Revision
		q := &candidateQueue{ready: make(chan struct{}, 1)}
		go sc.walkInto(ctx, q, KeyPrefix(res, namespace), opts)
		if err := q.peek(); err != nil {
			if ours && errors.Is(err, storage.ErrCompacted) && attempt < attempts {
				continue
			}
			return nil, nil, sc.storeError(err, opts.Revision)
		}
		return sc, q, nil
	}
}

// walkInto walks the store at opts into q, in batches.
func (sc *listScan) walkInto(ctx context.Context, q *candidateQueue, prefix string, opts storage.ListOptions) {
	sc.items = make([]ListItem, 0, firstStreamBatch)
	_, err := sc.s.store.Visit(ctx, prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
		sc.consider(key, kv)
		if len(sc.items) == cap(sc.items) {
			q.push(sc.items)
			sc.items = sc.s.streamBatch()
		}
		return false, nil
	})
	if len(sc.items) > 0 {
		q.push(sc.items)
	}
	sc.items = nil
	q.finish(err)
}

// writeBatch writes the candidates of batch that match.
func (sc *listScan) writeBatch(lw *listWriter, batch []ListItem) error {
	for i := range batch {
		ok, err := sc.decide(&batch[i])
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := lw.check(batch[i].ent); err != nil {
			return err
		}
		lw.item(batch[i].ent)
	}
	return nil
}

// candidateQueue hands batches of candidates from the goroutine walking the
// store to the one writing the answer. Pushing never blocks: the walker
// holds a read transaction, which a slow reader must not prolong.
type candidateQueue struct {
	mu      sync.Mutex
	batches [][]ListItem
	done    bool
	err     error
	ready   chan struct{} // capacity 1: something was queued since the last take
}

func (q *candidateQueue) push(batch []ListItem) {
	q.mu.Lock()
	q.batches = append(q.batches, batch)
	q.mu.Unlock()
	q.signal()
}

// finish records the end of the walk and its error.
func (q *candidateQueue) finish(err error) {
	q.mu.Lock()
	q.done, q.err = true, err
	q.mu.Unlock()
	q.signal()
}

func (q *candidateQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// peek waits until batches are queued or the walk ended, and returns the
// walk's error if it ended with one; take then hands over what is queued.
func (q *candidateQueue) peek() error {
	for {
		q.mu.Lock()
		queued, done, err := len(q.batches) > 0, q.done, q.err
		q.mu.Unlock()
		if done {
			return err
		}
		if queued {
			return nil
		}
		<-q.ready
	}
}

// take waits until batches are queued or the walk ended, and returns the
// batches queued so far and whether the walk ended (and with what error).
// The walk always ends, so take needs no cancellation.
func (q *candidateQueue) take() ([][]ListItem, bool, error) {
	for {
		q.mu.Lock()
		batches, done, err := q.batches, q.done, q.err
		q.batches = nil
		q.mu.Unlock()
		if len(batches) > 0 || done {
			return batches, done, err
		}
		<-q.ready
	}
}

// streamBatch returns an empty batch of streamBatch candidates: one
// written earlier, or a new one.
func (s *Store) streamBatch() []ListItem {
	if p, ok := s.streamBatches.Get().(*[]ListItem); ok {
		return (*p)[:0]
	}
	return make([]ListItem, 0, streamBatch)
}

// releaseStreamBatch hands back a written batch.
func (s *Store) releaseStreamBatch(batch []ListItem) {
	if cap(batch) != streamBatch {
		return // the small first one
	}
	clear(batch)
	batch = batch[:0]
	s.streamBatches.Put(&batch)
}
