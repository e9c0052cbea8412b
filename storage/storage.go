// Package storage defines the revisioned key-value store the API server keeps
// its objects in. Every write gets the next global revision, which the API
// server exposes as the object's resourceVersion; watches replay the revision
// log from a given revision, and old revisions are compacted away.
//
// Backend is the whole seam: everything the API server asks of a store,
// including the zero-copy reads, writes and list walks its hot paths use,
// is a method of it, and every backend (storage/bolt, storage/memory)
// implements all of it and passes the conformance suite (storagetest).
//
// Compaction has one owner, the backend: it knows what its history costs
// (bolt's revision log holds each update's new and previous value in a
// memory-mapped file; memory's is a ring of events), so it bounds it itself,
// keeping the newest revisions (bolt: 50,000, compacted every 10 s; memory:
// its history size, at each write). Compact remains for callers that need
// history gone at once (tests, tools); the API server does not compact.
package storage

import (
	"context"
	"errors"
)

// Readier is implemented by a Backend that can be running but unable to
// take writes (a full disk): Ready returns why, nil when it can.
type Readier interface {
	Ready() error
}

// Errors returned by every Backend. Callers test them with errors.Is.
var (
	ErrNotFound  = errors.New("storage: key not found")
	ErrExists    = errors.New("storage: key already exists")
	ErrConflict  = errors.New("storage: revision conflict")
	ErrCompacted = errors.New("storage: requested revision has been compacted")
	ErrFuture    = errors.New("storage: requested revision is in the future")
	ErrClosed    = errors.New("storage: backend closed")
)

// KeyValue is one stored object: its bytes and the revisions of its creation
// and of its last modification.
type KeyValue struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
}

// EventType says what happened to a key.
type EventType int

const (
	// EventCreated: the key did not exist before this revision.
	EventCreated EventType = iota
	// EventUpdated: the key existed and got a new value.
	EventUpdated
	// EventDeleted: the key was removed; KV holds the last value with
	// ModRevision set to the revision of the delete.
	EventDeleted
)

func (t EventType) String() string {
	switch t {
	case EventCreated:
		return "CREATED"
	case EventUpdated:
		return "UPDATED"
	case EventDeleted:
		return "DELETED"
	}
	return "UNKNOWN"
}

// Event is one entry of the revision log. Events delivered by Watch are
// shared between watchers: treat them and their values as read-only.
type Event struct {
	Type EventType
	KV   KeyValue
	// PrevKV is the value before this event (nil on create). Watchers with
	// selectors need it to tell "stopped matching" from "never matched".
	PrevKV *KeyValue
}

// ListOptions narrows a List.
type ListOptions struct {
	// Revision, when non-zero, asks for the state as of that revision. A
	// backend may serve only revisions it still has history for and returns
	// ErrCompacted otherwise, ErrFuture beyond its current revision.
	Revision int64
	// Limit caps the number of items; 0 means no limit.
	Limit int64
	// After lists only keys strictly greater than this one (pagination).
	After string
}

// ListResult is one page of a List.
type ListResult struct {
	Items []KeyValue
	// Revision is the store revision the page was read at.
	Revision int64
	// More is true when keys beyond the last item remain.
	More bool
	// Remaining counts the keys left after this page, when known (-1 if not).
	Remaining int64
}

// Backend is a revisioned key-value store. Keys are '/'-separated paths;
// listing and watching take a prefix. All writes are durable when they
// return (unless the backend documents otherwise, like the test-only memory
// backend).
type Backend interface {
	// Get returns the current value of key, or ErrNotFound. The value is
	// the caller's own copy.
	Get(ctx context.Context, key string) (KeyValue, error)
	// GetShared is Get for a caller that only reads the value: it may be
	// the store's own bytes (shared with watch events), so it must not be
	// changed.
	GetShared(ctx context.Context, key string) (KeyValue, error)
	// List returns the keys under prefix in key order, values copied.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Visit is List for a caller that looks at each value once: it calls
	// visit with each key under prefix in key order, as of opts.Revision,
	// after opts.After and up to opts.Limit keys, instead of copying them
	// out. kv carries the value and revisions (its Key is empty); key and
	// kv.Value are lent for the call only and must not be changed. visit
	// returning stop ends the walk there: More and Remaining then count the
	// keys left after the last one visited. Items is left nil. visit must
	// not call the backend.
	Visit(ctx context.Context, prefix string, opts ListOptions, visit func(key []byte, kv KeyValue) (stop bool, err error)) (ListResult, error)
	// Create stores value under a new key and returns the new revision;
	// ErrExists if the key is present. The store keeps a copy of value.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// CreateOwned is Create for a caller that hands value over: the store
	// may keep it without copying, so the caller must not change it after.
	CreateOwned(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces the value if the key's ModRevision equals expectedRev
	// (0 means unconditionally) and returns the new revision; ErrNotFound or
	// ErrConflict otherwise. The store keeps a copy of value.
	Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error)
	// UpdateOwned is Update handing value over, as CreateOwned.
	UpdateOwned(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error)
	// Delete removes the key if its ModRevision equals expectedRev (0 means
	// unconditionally) and returns the revision of the delete and the last
	// value.
	Delete(ctx context.Context, key string, expectedRev int64) (int64, KeyValue, error)
	// Watch streams, in revision order, every event under prefix with a
	// revision greater than fromRev (fromRev 0 means "from now"). It returns
	// ErrCompacted if history older than fromRev+1 is gone. The channel is
	// closed when ctx ends or when the watcher falls too far behind; the
	// caller then re-lists or resumes from its last revision.
	Watch(ctx context.Context, prefix string, fromRev int64) (<-chan []Event, error)
	// CurrentRevision is the revision of the latest write.
	CurrentRevision() int64
	// CompactRevision is the oldest revision a Watch can still start after.
	// The backend moves it forward itself as it bounds its history.
	CompactRevision() int64
	// Compact drops history up to and including rev at once (the backend
	// also compacts on its own; see the package doc).
	Compact(ctx context.Context, rev int64) error
	// Close releases the backend; pending watches are closed.
	Close() error
}
