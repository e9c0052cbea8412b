package genericstore

import (
	"context"

	"github.com/batchlet/batchlet/storage"
)

// zeroCopyStore is what a store may offer on top of storage.Backend to a
// caller that needs no copy of its own (the bolt store does): reads that
// return the store's bytes, and writes that keep the caller's.
type zeroCopyStore interface {
	// GetShared is Get returning a value that must not be changed.
	GetShared(ctx context.Context, key string) (storage.KeyValue, error)
	// CreateOwned and UpdateOwned keep value, which the caller must not
	// change after.
	CreateOwned(ctx context.Context, key string, value []byte) (int64, error)
	UpdateOwned(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error)
}

// getReadOnly reads key for a caller that only reads the value.
func (s *Store) getReadOnly(ctx context.Context, key string) (storage.KeyValue, error) {
	if z, ok := s.store.(zeroCopyStore); ok {
		return z.GetShared(ctx, key)
	}
	return s.store.Get(ctx, key)
}

// CreateHandingOver stores value, freshly encoded and not used after, under
// a new key.
func (s *Store) CreateHandingOver(ctx context.Context, key string, value []byte) (int64, error) {
	if z, ok := s.store.(zeroCopyStore); ok {
		return z.CreateOwned(ctx, key, value)
	}
	return s.store.Create(ctx, key, value)
}

// UpdateHandingOver is the same for a conditional update.
func (s *Store) UpdateHandingOver(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	if z, ok := s.store.(zeroCopyStore); ok {
		return z.UpdateOwned(ctx, key, value, expectedRev)
	}
	return s.store.Update(ctx, key, value, expectedRev)
}
