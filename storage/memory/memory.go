// Package memory is a storage.Backend that keeps everything in process
// memory. It is for tests only: nothing survives a restart.
package memory

import (
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

// New returns an empty backend that keeps the last historySize events for
// watches that start in the past.
func New(historySize int) *Backend {
	return &Backend{data: map[string]storage.KeyValue{}, hub: watchhub.New(historySize)}
}

func (b *Backend) Get(_ context.Context, key string) (storage.KeyValue, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return storage.KeyValue{}, storage.ErrClosed
	}
	kv, ok := b.data[key]
	if !ok {
		return storage.KeyValue{}, storage.ErrNotFound
	}
	kv.Value = append([]byte(nil), kv.Value...)
	return kv, nil
}

func (b *Backend) List(_ context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return storage.ListResult{}, storage.ErrClosed
	}
	if opts.Revision > b.rev {
		return storage.ListResult{}, storage.ErrFuture
	}
	if opts.Revision != 0 && opts.Revision < b.rev {
		// Only the current state is kept.
		return storage.ListResult{}, storage.ErrCompacted
	}
	keys := make([]string, 0)
	for k := range b.data {
		if strings.HasPrefix(k, prefix) && k > opts.After {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := storage.ListResult{Revision: b.rev, Remaining: 0}
	if opts.Limit > 0 && int64(len(keys)) > opts.Limit {
		res.More = true
		res.Remaining = int64(len(keys)) - opts.Limit
		keys = keys[:opts.Limit]
	}
	for _, k := range keys {
		kv := b.data[k]
		kv.Value = append([]byte(nil), kv.Value...)
		res.Items = append(res.Items, kv)
	}
	return res, nil
}

func (b *Backend) Create(_ context.Context, key string, value []byte) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, storage.ErrClosed
	}
	if _, ok := b.data[key]; ok {
		return 0, storage.ErrExists
	}
	b.rev++
	kv := storage.KeyValue{Key: key, Value: append([]byte(nil), value...), CreateRevision: b.rev, ModRevision: b.rev}
	b.data[key] = kv
	b.hub.Publish([]storage.Event{{Type: storage.EventCreated, KV: kv}})
	return b.rev, nil
}

func (b *Backend) Update(_ context.Context, key string, value []byte, expectedRev int64) (int64, error) {
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
	kv := storage.KeyValue{Key: key, Value: append([]byte(nil), value...), CreateRevision: prev.CreateRevision, ModRevision: b.rev}
	b.data[key] = kv
	b.hub.Publish([]storage.Event{{Type: storage.EventUpdated, KV: kv, PrevKV: &prev}})
	return b.rev, nil
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
	b.hub.Publish([]storage.Event{{Type: storage.EventDeleted, KV: last, PrevKV: &prev}})
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
