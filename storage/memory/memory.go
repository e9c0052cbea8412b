// Package memory is a storage.Backend that keeps everything in process
// memory. It is for tests only: nothing survives a restart.
//
// It implements the whole Backend, zero-copy methods included: a stored
// value is never changed in place (an update stores a new slice), so it can
// be lent to readers. Its history is bounded like bolt's: it keeps the
// newest historySize revisions (trimmed by a quarter at a time), and the
// compaction point follows at each write, so CompactRevision always says how far back a Watch can start.
// Lists serve the current state only (ErrCompacted for an older revision).
package memory

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/watchhub"
)

// Backend is an in-memory storage.Backend.
type Backend struct {
	mu         sync.RWMutex
	data       map[string]storage.KeyValue
	rev        int64
	compactRev int64
	closed     bool
	hub        *watchhub.Hub
}

var _ storage.Backend = (*Backend)(nil)

// New returns an empty backend that keeps the newest historySize revisions
// for watches that start in the past.
func New(historySize int) *Backend {
	return &Backend{data: map[string]storage.KeyValue{}, hub: watchhub.New(historySize)}
}

// Get returns a copy of key's current value.
func (b *Backend) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := b.GetShared(ctx, key)
	kv.Value = bytes.Clone(kv.Value)
	return kv, err
}

// GetShared returns key's current value itself: stored values are never
// changed in place.
func (b *Backend) GetShared(_ context.Context, key string) (storage.KeyValue, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return storage.KeyValue{}, storage.ErrClosed
	}
	kv, ok := b.data[key]
	if !ok {
		return storage.KeyValue{}, storage.ErrNotFound
	}
	return kv, nil
}

// List returns copies of the current values under prefix.
func (b *Backend) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	items := []storage.KeyValue{}
	res, err := b.Visit(ctx, prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
		kv.Key, kv.Value = string(key), bytes.Clone(kv.Value)
		items = append(items, kv)
		return false, nil
	})
	if err != nil {
		return storage.ListResult{}, err
	}
	res.Items = items
	return res, nil
}

// Visit lends the current values under prefix to visit, in key order. The
// page is taken under the lock and visited after it, so visit may be slow.
func (b *Backend) Visit(_ context.Context, prefix string, opts storage.ListOptions, visit func(key []byte, kv storage.KeyValue) (stop bool, err error)) (storage.ListResult, error) {
	page, res, err := b.page(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	for i, kv := range page {
		key := []byte(kv.Key)
		kv.Key = ""
		stop, err := visit(key, kv)
		if err != nil {
			return storage.ListResult{}, err
		}
		if stop {
			left := int64(len(page) - 1 - i)
			res.More = res.More || left > 0
			res.Remaining += left
			break
		}
	}
	return res, nil
}

// page is the current state under prefix after opts.After, up to
// opts.Limit keys, and the result it makes before any visit stops it.
func (b *Backend) page(prefix string, opts storage.ListOptions) ([]storage.KeyValue, storage.ListResult, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	switch {
	case b.closed:
		return nil, storage.ListResult{}, storage.ErrClosed
	case opts.Revision > b.rev:
		return nil, storage.ListResult{}, storage.ErrFuture
	case opts.Revision != 0 && opts.Revision < b.rev:
		// Only the current state is kept.
		return nil, storage.ListResult{}, storage.ErrCompacted
	}
	keys := make([]string, 0)
	for k := range b.data {
		if strings.HasPrefix(k, prefix) && k > opts.After {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := storage.ListResult{Revision: b.rev}
	if opts.Limit > 0 && int64(len(keys)) > opts.Limit {
		res.More = true
		res.Remaining = int64(len(keys)) - opts.Limit
		keys = keys[:opts.Limit]
	}
	page := make([]storage.KeyValue, len(keys))
	for i, k := range keys {
		page[i] = b.data[k]
	}
	return page, res, nil
}

// Create stores a copy of value under a new key.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return b.CreateOwned(ctx, key, bytes.Clone(value))
}

// CreateOwned stores value itself under a new key.
func (b *Backend) CreateOwned(_ context.Context, key string, value []byte) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, storage.ErrClosed
	}
	if _, ok := b.data[key]; ok {
		return 0, storage.ErrExists
	}
	b.rev++
	kv := storage.KeyValue{Key: key, Value: value, CreateRevision: b.rev, ModRevision: b.rev}
	b.data[key] = kv
	b.publish(storage.Event{Type: storage.EventCreated, KV: kv})
	return b.rev, nil
}

// Update stores a copy of value under key.
func (b *Backend) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	return b.UpdateOwned(ctx, key, bytes.Clone(value), expectedRev)
}

// UpdateOwned stores value itself under key.
func (b *Backend) UpdateOwned(_ context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, storage.ErrClosed
	}
	prev, ok := b.data[key]
	if !ok {
		return 0, storage.ErrNotFound
	}
	if expectedRev != 0 && prev.ModRevision != expectedRev {
		return 0, storage.ErrConflict
	}
	b.rev++
	kv := storage.KeyValue{Key: key, Value: value, CreateRevision: prev.CreateRevision, ModRevision: b.rev}
	b.data[key] = kv
	b.publish(storage.Event{Type: storage.EventUpdated, KV: kv, PrevKV: &prev})
	return b.rev, nil
}

// publish hands a committed event to the watchers and moves the
// compaction point up to the history the hub still holds: the newest
// historySize revisions. Callers hold b.mu.
func (b *Backend) publish(ev storage.Event) {
	b.hub.Publish([]storage.Event{ev})
	oldest := b.hub.OldestRevision()
	if oldest == 0 { // no history kept at all
		oldest = b.rev + 1
	}
	if oldest-1 > b.compactRev {
		b.compactRev = oldest - 1
	}
}

func (b *Backend) Delete(_ context.Context, key string, expectedRev int64) (int64, storage.KeyValue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, storage.KeyValue{}, storage.ErrClosed
	}
	prev, ok := b.data[key]
	if !ok {
		return 0, storage.KeyValue{}, storage.ErrNotFound
	}
	if expectedRev != 0 && prev.ModRevision != expectedRev {
		return 0, storage.KeyValue{}, storage.ErrConflict
	}
	b.rev++
	delete(b.data, key)
	last := prev
	last.ModRevision = b.rev
	b.publish(storage.Event{Type: storage.EventDeleted, KV: last, PrevKV: &prev})
	return b.rev, prev, nil
}

func (b *Backend) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan []storage.Event, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if fromRev > b.rev {
		return nil, storage.ErrFuture
	}
	return b.hub.Watch(ctx, prefix, fromRev, b.compactRev)
}

func (b *Backend) CurrentRevision() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.rev
}

func (b *Backend) CompactRevision() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.compactRev
}

func (b *Backend) Compact(_ context.Context, rev int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rev > b.rev {
		return storage.ErrFuture
	}
	if rev > b.compactRev {
		b.compactRev = rev
	}
	return nil
}

func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.hub.Close()
	return nil
}
