package genericstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// listScan answers one list request: the stored versions of res under a
// prefix that pass f, in key order, within limit, continue and
// resourceVersion. With entries it collects each match's cached entry,
// copying no value the entry cache has; with encoded, each match's
// protobuf list item where consider can tell it matches; otherwise each
// match's stored version (a copy) and, where matching needed it, its
// decoded object.
type listScan struct {
	s       *Store
	res     *registry.Resource
	f       *Filter
	limit   int64
	entries bool
	encoded bool
	view    string // viewOf(res), named once for all the entry lookups
	// arena, when set, holds the copies of stored versions and slab their
	// storedItems: a few allocations per list instead of two per item, for
	// answers that use the copies only while they are written.
	arena *copyArena

	items     []ListItem
	rev       int64
	cont      string
	remaining *int64
}

// ListItem is one candidate of a scan: its cached entry, or its protobuf
// list item, or a copy of its stored version, or an entry and a copy.
// Small, as a list of 10,000s holds one each.
type ListItem struct {
	ent *StoredEntry
	pb  *encodedItem
	st  *storedItem
}

// storedItem is a candidate's stored version (a copy) and its decoded
// object when something decoded it; undecided when only that object can
// tell whether it matches (a field selector, or no cached labels).
type storedItem struct {
	kv        storage.KeyValue
	obj       runtime.Object
	undecided bool
}

func newListScan(s *Store, res *registry.Resource, f *Filter, limit int64, entries bool) *listScan {
	return &listScan{s: s, res: res, f: f, limit: limit, entries: entries, view: viewOf(res)}
}

// listOptions turns continue / resourceVersion / resourceVersionMatch into
// store list options, waiting for a resourceVersion not reached yet.
func (s *Store) listOptions(ctx context.Context, cont, rv, rvMatch string) (storage.ListOptions, error) {
	var opts storage.ListOptions
	if cont != "" {
		tok, err := decodeContinue(cont)
		if err != nil {
			return opts, err
		}
		opts.Revision, opts.After = tok.Rev, tok.Start
	} else if rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv))
		}
		if err := s.waitForRevision(ctx, n); err != nil {
			return opts, err
		}
		if rvMatch == string(metav1.ResourceVersionMatchExact) {
			opts.Revision = n
		}
	}
	return opts, nil
}

// run scans prefix from opts. Each walk of the store stops once it has
// limit candidates; candidates that resolve finds not to match make it go
// on after the last key seen, at the same revision.
func (sc *listScan) run(ctx context.Context, prefix string, opts storage.ListOptions, fromContinue bool) error {
	for {
		start := len(sc.items)
		var last string // the key the walk stopped at
		page, err := sc.s.store.Visit(ctx, prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
			sc.consider(key, kv)
			stop := sc.limit > 0 && int64(len(sc.items)) >= sc.limit
			if stop {
				last = string(key)
			}
			return stop, nil
		})
		if errors.Is(err, storage.ErrCompacted) && fromContinue && opts.Revision != 0 {
			// History for the token's revision is gone: go on at the current
			// revision rather than failing the whole list.
			sc.items = sc.items[:start]
			opts.Revision = 0
			continue
		}
		if err != nil {
			return sc.storeError(err, opts.Revision)
		}
		sc.rev, opts.Revision = page.Revision, page.Revision
		if err := sc.resolve(start); err != nil {
			return apierrors.NewInternalError(err)
		}
		if sc.limit > 0 && int64(len(sc.items)) >= sc.limit {
			if page.More {
				sc.cont = encodeContinue(page.Revision, last)
				if sc.f.empty() && page.Remaining >= 0 {
					rem := page.Remaining
					sc.remaining = &rem
				}
			}
			return nil
		}
		if !page.More {
			return nil
		}
		opts.After = last
	}
}

// storeError is the API error for a failed walk of the store at rev.
func (sc *listScan) storeError(err error, rev int64) error {
	if errors.Is(err, storage.ErrFuture) {
		return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rev, sc.s.store.CurrentRevision()), 1)
	}
	return sc.s.storageError(err, sc.res, "")
}

// consider looks at one stored version during the store's walk, where key
// and kv's value are only lent. A cached entry answers a label selector (or
// none); kv is copied where the caller wants stored versions or the entry
// is missing.
func (sc *listScan) consider(key []byte, kv storage.KeyValue) {
	var it ListItem
	if sc.entries || (!sc.f.empty() && sc.f.fields.Empty()) {
		it.ent = sc.s.cachedEntry(sc.view, key, kv.ModRevision)
	}
	undecided := false
	switch {
	case it.ent == nil:
		undecided = !sc.f.empty() || sc.entries
	case !sc.f.fields.Empty():
		undecided = true
	case !sc.f.labels.Matches(labels.Set(it.ent.labels)):
		return
	}
	if sc.encoded && !undecided {
		// On an error the copy below goes on, to fail where it is written.
		it.pb, _ = sc.s.encodedItemOf(sc.res, sc.view, key, kv)
	}
	if it.pb == nil && (undecided || !sc.entries) {
		kv.Key = string(key)
		if sc.arena != nil {
			kv.Value = sc.arena.copy(kv.Value)
			it.st = sc.arena.item()
		} else {
			kv.Value = bytes.Clone(kv.Value)
			it.st = new(storedItem)
		}
		*it.st = storedItem{kv: kv, undecided: undecided}
	}
	if len(sc.items) == cap(sc.items) {
		// Doubling: a 10,000-item list leaves a third of the garbage of
		// append's gentler growth.
		sc.items = slices.Grow(sc.items, max(len(sc.items), 64))
	}
	sc.items = append(sc.items, it)
}

// resolve decides the undecided candidates from start on and drops those
// that do not match.
func (sc *listScan) resolve(start int) error {
	kept := sc.items[:start]
	for _, it := range sc.items[start:] {
		ok, err := sc.decide(&it)
		if err != nil {
			return err
		}
		if ok {
			kept = append(kept, it)
		}
	}
	clear(sc.items[len(kept):])
	sc.items = kept
	return nil
}

// decide tells whether a candidate matches, decoding it if consider could
// not tell; for entries, a match gets its entry (and drops its stored
// version).
func (sc *listScan) decide(it *ListItem) (bool, error) {
	if it.st == nil || !it.st.undecided {
		return true, nil
	}
	obj, err := decodeKV(sc.res, it.st.kv)
	if err != nil {
		return false, err
	}
	if !sc.f.matches(obj) {
		return false, nil
	}
	it.st.obj, it.st.undecided = obj, false
	if !sc.entries {
		return true, nil
	}
	if it.ent == nil {
		if it.ent, err = sc.s.Entry(sc.res, it.st.kv, obj); err != nil {
			return false, err
		}
	}
	it.st = nil
	return true, nil
}

// copyArena hands out copies of stored values from chunks of 1 MB and
// storedItems from slabs: what one list answer copies out of the store, to
// be dropped as a whole once the answer is written.
type copyArena struct {
	chunk []byte
	slab  []storedItem
}

const arenaChunk = 1 << 20

// copy returns a copy of v that lives in the arena.
func (a *copyArena) copy(v []byte) []byte {
	if len(v) > arenaChunk/4 {
		return bytes.Clone(v)
	}
	if cap(a.chunk)-len(a.chunk) < len(v) {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	n := len(a.chunk)
	a.chunk = append(a.chunk, v...)
	return a.chunk[n:len(a.chunk):len(a.chunk)]
}

// item returns a zero storedItem that lives in the arena.
func (a *copyArena) item() *storedItem {
	if len(a.slab) == cap(a.slab) {
		a.slab = make([]storedItem, 0, 1024)
	}
	a.slab = a.slab[:len(a.slab)+1]
	return &a.slab[len(a.slab)-1]
}
