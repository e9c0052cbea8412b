package genericstore

import (
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
)

// encodedItemsSize and encodedItemsBytes bound the cache of protobuf list
// items: as many objects as the entry cache, and 16 MB of items (10,000
// pods take about 7 MB). An item over 1/64 of the bytes is never kept, so
// that one large object cannot empty the cache.
const (
	encodedItemsSize  = entryCacheSize
	encodedItemsBytes = 16 << 20
)

// encodedItem is one object version as an item of a protobuf list: its
// message, with its resourceVersion in its metadata. Shared and never
// modified.
type encodedItem struct {
	rev int64
	msg []byte
}

// encodedItems keeps the protobuf list item of each object's newest
// version listed, so that a list of 10,000s of objects writes their
// bytes as they are instead of copying each value out of the store and
// splicing its revision in again per request: no allocation per item once
// the cache holds them. Items are made lazily, by the first protobuf list
// that meets a version. Keys are evicted oldest-inserted first, by count
// and by total size.
type encodedItems struct {
	mu       sync.Mutex
	views    map[string]map[string]*encodedItem // view (viewOf) → key → item
	ring     []encodedKey                       // insertion order
	next     int
	bytes    int
	maxBytes int
}

type encodedKey struct{ view, key string }

func newEncodedItems(size, maxBytes int) *encodedItems {
	return &encodedItems{views: map[string]map[string]*encodedItem{}, ring: make([]encodedKey, size), maxBytes: maxBytes}
}

// peek returns the cached item of version rev of key in view, or nil. The
// key is looked up without being copied into a string.
func (c *encodedItems) peek(view string, key []byte, rev int64) *encodedItem {
	c.mu.Lock()
	it := c.views[view][string(key)]
	c.mu.Unlock()
	if it != nil && it.rev == rev {
		return it
	}
	return nil
}

// add keeps it as key's item in view unless a newer version is kept, or it
// is too large to keep.
func (c *encodedItems) add(view, key string, it *encodedItem) {
	if len(it.msg) > c.maxBytes/64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.views[view]
	if m == nil {
		m = map[string]*encodedItem{}
		c.views[view] = m
	}
	if old, ok := m[key]; ok {
		if old.rev < it.rev {
			m[key] = it
			c.bytes += len(it.msg) - len(old.msg)
		}
		return
	}
	c.evict(c.next)
	for i := (c.next + 1) % len(c.ring); c.bytes+len(it.msg) > c.maxBytes && i != c.next; i = (i + 1) % len(c.ring) {
		c.evict(i)
	}
	c.ring[c.next] = encodedKey{view, key}
	c.next = (c.next + 1) % len(c.ring)
	m[key] = it
	c.bytes += len(it.msg)
}

// evict empties slot i of the ring.
func (c *encodedItems) evict(i int) {
	k := c.ring[i]
	if k == (encodedKey{}) {
		return
	}
	if it, ok := c.views[k.view][k.key]; ok {
		c.bytes -= len(it.msg)
		delete(c.views[k.view], k.key)
	}
	c.ring[i] = encodedKey{}
}

// encodedItemOf returns the protobuf list item of kv, one of res's stored
// versions (its value may be only lent: the item is a copy), from the
// cache or made and kept.
func (s *Store) encodedItemOf(res *registry.Resource, view string, key []byte, kv storage.KeyValue) (*encodedItem, error) {
	if it := s.pbItems.peek(view, key, kv.ModRevision); it != nil {
		return it, nil
	}
	var p protobufItem
	if err := p.plan(res, kv.Value, kv.ModRevision); err != nil {
		return nil, err
	}
	it := &encodedItem{rev: kv.ModRevision, msg: p.appendMsg(make([]byte, 0, p.objLen()))}
	s.pbItems.add(view, string(key), it)
	return it, nil
}

// scanItems returns an empty slice of candidates to scan into: the slice
// of an earlier protobuf list, or nil. A list of 10,000s otherwise leaves
// its grown slices (about twice its final one) as garbage.
func (s *Store) scanItems() []ListItem {
	if p, ok := s.scanSlices.Get().(*[]ListItem); ok {
		return (*p)[:0]
	}
	return nil
}

// releaseScanItems hands back the slice of a written list.
func (s *Store) releaseScanItems(items []ListItem) {
	if cap(items) == 0 {
		return
	}
	clear(items[:cap(items)])
	items = items[:0]
	s.scanSlices.Put(&items)
}
