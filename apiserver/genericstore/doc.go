// Package genericstore is the API server's storage layer for every served
// resource: typed Get, List, Watch, Create, Update and Delete of
// registry.Resource objects over a storage.Backend, shaped like
// k8s.io/apiserver's storage interface beneath its generic registry (the
// etcd3 store with its watch cache).
//
// It owns what makes reads cheap and consistent: the storage encoding
// (protobuf for built-in kinds, JSON for custom resources), the keys
// (/registry/<group>/<resource>/<namespace>/<name>), the decoded and
// encoded caches shared by every reader of one object version, list
// pagination and resourceVersion semantics, selector filtering, and the
// translation of storage events into watch events with selector
// transitions.
//
// Both readers of the API use it: the HTTP endpoints (package apiserver's
// handlers) and the in-process informers (Server.LocalListerWatcher), so
// the two cannot disagree. What a write means — admission, defaulting,
// the resource's strategy, validation, field managers — stays with the
// caller, which hands the store finished objects (Create) or a function
// from the current object to the new one (the update loop retries it on
// conflicts).
package genericstore

import (
	"log/slog"
	"sync"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// entryCacheSize is how many stored objects keep the encoded form of their
// newest version: enough for lists of a working set of 10,000s of pods to
// be served from it (about 2.7 KB per running pod, so some 45 MB at most).
const entryCacheSize = 16384

// versionCacheSize and versionCacheBytes bound each cache of decoded
// versions (decCache, localCache): they only need to hold a version until
// every watcher has taken it, which in-process watchers do within
// milliseconds. 2 MiB of encoded versions is about the 1,024 entries'
// worth of small pods (2 KB or so in protobuf), and keeps large objects
// (big annotations, env or status) from multiplying the memory: a decoded
// object is a few times its encoded size. Every cached version also keeps
// its decoded object alive after the informers moved on to a newer one,
// so the caches were a fifth of the live heap of sim 100,000 x 1,000 at
// 4,096 entries and 8 MiB each (docs/benchmarks.md, session 10).
const (
	versionCacheSize  = 1024
	versionCacheBytes = 2 << 20
)

// fieldCacheSize is how many versions keep their field set: one is only
// needed until every field-selected watcher has matched it and the next
// version's event (whose previous version it is).
const fieldCacheSize = 1024

// Config is what a Store is built from.
type Config struct {
	Backend storage.Backend
	Clock   clock.Clock
	Logger  *slog.Logger
	// BookmarkInterval is how often watches that asked for bookmarks get
	// one.
	BookmarkInterval time.Duration
}

// Store reads and writes the objects of every resource in one backend.
type Store struct {
	cfg   Config
	store storage.Backend
	clock clock.Clock
	log   *slog.Logger
	// entCache holds each object's newest served JSON (lists, watches).
	entCache *latestCache[*StoredEntry]
	// pbItems holds each object's newest protobuf list item (lists).
	pbItems *encodedItems
	// listBufs holds the 64 KB write buffers of finished list answers;
	// scanSlices and streamBatches the candidate slices of finished
	// protobuf lists and streamed batches.
	listBufs, scanSlices, streamBatches sync.Pool
	// decCache holds decoded versions shared read-only by watches and
	// updates.
	decCache *ringCache[runtime.Object]
	// localCache holds the objects in-process informers share (see
	// InformerCopy).
	localCache *ringCache[runtime.Object]
	// fieldCache holds the field sets of versions that field-selected
	// watchers matched, shared by them.
	fieldCache *ringCache[fields.Set]
}

// New returns a Store over cfg.Backend.
func New(cfg Config) *Store {
	return &Store{
		cfg: cfg, store: cfg.Backend, clock: cfg.Clock, log: cfg.Logger,
		entCache:   newLatestCache[*StoredEntry](entryCacheSize),
		pbItems:    newEncodedItems(encodedItemsSize, encodedItemsBytes),
		decCache:   newSizedRingCache[runtime.Object](versionCacheSize, versionCacheBytes),
		localCache: newSizedRingCache[runtime.Object](versionCacheSize, versionCacheBytes),
		fieldCache: newRingCache[fields.Set](fieldCacheSize),
	}
}

// Backend is the storage the Store reads and writes.
func (s *Store) Backend() storage.Backend { return s.store }

// InformerCopy returns the object of a stored version that in-process
// informers share, made once by make; variant separates kinds of it
// (whole objects, metadata only).
func (s *Store) InformerCopy(res *registry.Resource, kv storage.KeyValue, variant string, make func() (runtime.Object, error)) (runtime.Object, error) {
	return s.localCache.getSized(versionOf(res, variant, kv), len(kv.Value), make)
}
