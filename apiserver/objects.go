package apiserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// encodeForStorage serialises obj with its apiVersion/kind and without a
// resourceVersion (the storage revision is the resourceVersion).
func encodeForStorage(r *registry.Resource, obj runtime.Object) ([]byte, error) {
	obj.GetObjectKind().SetGroupVersionKind(r.GVK())
	if r.ToStorage != nil {
		obj = r.ToStorage(obj)
		obj.GetObjectKind().SetGroupVersionKind(r.StorageGVK)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	data, err := json.Marshal(obj)
	m.SetResourceVersion(rv)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.Kind, err)
	}
	return data, nil
}

// decodeStored turns a stored value into a typed object carrying rev as its
// resourceVersion.
func decodeStored(r *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	obj := r.New()
	if r.FromStorage != nil {
		obj = r.StorageNew()
	}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", r.Kind, err)
	}
	if r.FromStorage != nil {
		obj = r.FromStorage(obj)
	}
	obj.GetObjectKind().SetGroupVersionKind(r.GVK())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

func decodeKV(r *registry.Resource, kv storage.KeyValue) (runtime.Object, error) {
	return decodeStored(r, kv.Value, kv.ModRevision)
}

func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// encodeCache keeps the JSON encoding of recently served object versions so
// that a watch event fanned out to many watchers is encoded once. It is a
// fixed-size ring: the oldest entry makes room for the newest.
type encodeCache struct {
	mu    sync.Mutex
	items map[encodeKey][]byte
	ring  []encodeKey
	next  int
}

type encodeKey struct {
	key string
	rev int64
}

func newEncodeCache(size int) *encodeCache {
	return &encodeCache{items: make(map[encodeKey][]byte, size), ring: make([]encodeKey, size)}
}

// get returns the cached bytes for key at rev, computing them with enc on a
// miss.
func (c *encodeCache) get(key string, rev int64, enc func() ([]byte, error)) ([]byte, error) {
	k := encodeKey{key, rev}
	c.mu.Lock()
	b, ok := c.items[k]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := enc()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return b, nil
	}
	old := c.ring[c.next]
	if old.key != "" {
		delete(c.items, old)
	}
	c.ring[c.next] = k
	c.next = (c.next + 1) % len(c.ring)
	c.items[k] = b
	return b, nil
}
