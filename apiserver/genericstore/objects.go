package genericstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// protobufMagic starts Kubernetes' protobuf envelope: a runtime.Unknown
// carrying apiVersion, kind and the object's protobuf bytes.
var protobufMagic = []byte("k8s\x00")

// protoMessage is what the generated protobuf code of built-in kinds adds.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// storesProtobuf says whether obj (in its storage form) is stored as
// protobuf, as upstream stores built-in kinds in etcd: several times
// cheaper to write and read than JSON. Custom resources have no protobuf
// form and stay JSON; reading accepts either.
func storesProtobuf(obj runtime.Object) bool {
	_, ok := obj.(protoMessage)
	return ok
}

// Encode serialises obj with its apiVersion/kind and without a
// resourceVersion (the storage revision is the resourceVersion).
func Encode(r *registry.Resource, obj runtime.Object) ([]byte, error) {
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
	data, err := encodeStorage(obj)
	m.SetResourceVersion(rv)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.Kind, err)
	}
	return data, nil
}

// encodeStorage is obj's stored form: protobuf for built-in kinds, JSON
// otherwise. A custom resource's map is marshalled directly: json.Marshal
// of an *Unstructured calls its MarshalJSON (an Encoder's output of the
// same map) and then compacts and re-escapes that output, a second pass
// that changes no byte but the trailing newline it drops.
func encodeStorage(obj runtime.Object) ([]byte, error) {
	if storesProtobuf(obj) {
		return encodeProtobuf(obj)
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return json.Marshal(u.Object)
	}
	return json.Marshal(obj)
}

// decodeStored turns a stored value into a typed object carrying rev as its
// resourceVersion.
func decodeStored(r *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	obj := r.New()
	if r.FromStorage != nil {
		obj = r.StorageNew()
	}
	if err := DecodeValue(value, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", r.Kind, err)
	}
	if r.FromStorage != nil {
		obj = r.FromStorage(obj)
	}
	if u, ok := obj.(runtime.Unstructured); ok && r.DefaultRaw != nil {
		// Custom resources are defaulted when read too, as upstream does:
		// a default added to the schema later shows on older objects.
		r.DefaultRaw(u.UnstructuredContent())
	}
	obj.GetObjectKind().SetGroupVersionKind(r.GVK())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// encodeProtobuf wraps obj's protobuf bytes in the envelope. Generated
// types marshal straight into the envelope's buffer (one allocation, as
// the protobuf serializer does it), others through their Marshal.
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}
	if m, ok := obj.(runtime.ProtobufMarshaller); ok {
		size := uint64(m.Size())
		// The raw field: its tag, its length as a varint, its bytes.
		envSize := unk.Size() + 1 + (bits.Len64(size|1)+6)/7 + int(size)
		data := make([]byte, len(protobufMagic)+envSize)
		n, err := unk.NestedMarshalTo(data[len(protobufMagic):], m, size)
		if err != nil {
			return nil, err
		}
		copy(data, protobufMagic)
		return data[:len(protobufMagic)+n], nil
	}
	raw, err := obj.(protoMessage).Marshal()
	if err != nil {
		return nil, err
	}
	unk.Raw = raw
	env, err := unk.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append(make([]byte, 0, len(protobufMagic)+len(env)), protobufMagic...), env...), nil
}

// DecodeValue decodes a stored value, protobuf or JSON, into obj.
func DecodeValue(value []byte, obj runtime.Object) error {
	if !bytes.HasPrefix(value, protobufMagic) {
		return json.Unmarshal(value, obj)
	}
	pm, ok := obj.(protoMessage)
	if !ok {
		return fmt.Errorf("stored as protobuf but %T has no protobuf form", obj)
	}
	raw, err := envelopeRaw(value[len(protobufMagic):])
	if err != nil {
		return err
	}
	return pm.Unmarshal(raw)
}

// envelopeRaw returns the raw field (2) of a protobuf runtime.Unknown
// without copying it, as runtime.Unknown's Unmarshal would.
func envelopeRaw(b []byte) ([]byte, error) {
	var raw []byte
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("bad protobuf envelope tag")
		}
		b = b[n:]
		field, wire := tag>>3, tag&7
		switch wire {
		case 0: // varint
			if _, n = binary.Uvarint(b); n <= 0 {
				return nil, fmt.Errorf("bad protobuf envelope varint")
			}
			b = b[n:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, fmt.Errorf("bad protobuf envelope length")
			}
			if field == 2 {
				raw = b[n : n+int(l)]
			}
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("unexpected protobuf wire type %d in envelope", wire)
		}
	}
	return raw, nil
}

// decodeKV decodes a stored version of one of res's objects, with its
// resourceVersion.
func decodeKV(r *registry.Resource, kv storage.KeyValue) (runtime.Object, error) {
	return decodeStored(r, kv.Value, kv.ModRevision)
}

// Accessor is obj's metadata; every stored object has some, so a missing
// one is a programming error (panic).
func Accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// ringCache keeps values for recently seen object versions (key and
// revision), so that a watch event fanned out to many watchers is decoded
// and encoded once. It is a fixed-size ring: the oldest entries make room
// for the newest, both for the number of entries and for their total
// (encoded) size, so that large objects do not multiply its memory. Cached
// values are shared and must not be modified.
type ringCache[V any] struct {
	mu       sync.Mutex
	items    map[versionKey]V
	ring     []versionKey
	sizes    []int // of ring's entries
	next     int
	bytes    int // sum of sizes
	maxBytes int // 0: no size bound
}

// versionKey names one version of a stored object as one resource's view
// of it (core and events.k8s.io events share a store; a CRD's versions
// differ in apiVersion) and one variant of the cached value. It is a
// struct rather than a joined string so that looking a version up, once
// per watcher and event, allocates nothing.
type versionKey struct {
	view    schema.GroupVersion
	variant string
	key     string
	rev     int64
}

// versionOf is the versionKey of res's view of kv, for variant.
func versionOf(res *registry.Resource, variant string, kv storage.KeyValue) versionKey {
	return versionKey{view: res.GVR.GroupVersion(), variant: variant, key: kv.Key, rev: kv.ModRevision}
}

func newRingCache[V any](size int) *ringCache[V] {
	return &ringCache[V]{items: make(map[versionKey]V, size), ring: make([]versionKey, size), sizes: make([]int, size)}
}

// newSizedRingCache is a ringCache of at most size entries whose sizes
// (as given to getSized) add up to at most maxBytes.
func newSizedRingCache[V any](size, maxBytes int) *ringCache[V] {
	c := newRingCache[V](size)
	c.maxBytes = maxBytes
	return c
}

// get returns the cached value for version k, computing it with make on a
// miss.
func (c *ringCache[V]) get(k versionKey, make func() (V, error)) (V, error) {
	return c.getSized(k, 0, make)
}

// getSized is get for a value that counts as size bytes against maxBytes
// (the encoded size of the version: a decoded object is a few times it).
func (c *ringCache[V]) getSized(k versionKey, size int, make func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.items[k]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.items[k]; ok {
		return cached, nil
	}
	c.evict(c.next)
	if c.maxBytes > 0 {
		for i := (c.next + 1) % len(c.ring); c.bytes+size > c.maxBytes && i != c.next; i = (i + 1) % len(c.ring) {
			c.evict(i)
		}
	}
	c.ring[c.next], c.sizes[c.next] = k, size
	c.bytes += size
	c.next = (c.next + 1) % len(c.ring)
	c.items[k] = v
	return v, nil
}

// peek returns the cached value for version k, if there is one.
func (c *ringCache[V]) peek(k versionKey) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.items[k]
	return v, ok
}

// evict empties slot i of the ring.
func (c *ringCache[V]) evict(i int) {
	if old := c.ring[i]; old != (versionKey{}) {
		delete(c.items, old)
		c.bytes -= c.sizes[i]
		c.ring[i], c.sizes[i] = versionKey{}, 0
	}
}

// latestCache keeps one value per key, for its newest version seen: older
// versions never take room from current ones, so a cache sized for the
// working set holds all of it. Keys are evicted oldest-inserted first. A
// request for an older version than the cached one computes the value
// without keeping it. Cached values are shared and must not be modified.
type latestCache[V any] struct {
	mu    sync.Mutex
	items map[objKey]latestItem[V]
	ring  []objKey
	next  int
}

// objKey names a stored object as one resource's view of it (core and
// events.k8s.io events share a store).
type objKey struct {
	group string
	key   string
}

type latestItem[V any] struct {
	rev int64
	v   V
}

func newLatestCache[V any](size int) *latestCache[V] {
	return &latestCache[V]{items: make(map[objKey]latestItem[V], size), ring: make([]objKey, size)}
}

// get returns the cached value for key at rev, computing it with make on a
// miss.
func (c *latestCache[V]) get(key objKey, rev int64, make func() (V, error)) (V, error) {
	c.mu.Lock()
	it, ok := c.items[key]
	c.mu.Unlock()
	if ok && it.rev == rev {
		return it.v, nil
	}
	v, err := make()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok = c.items[key]
	switch {
	case ok && it.rev == rev:
		return it.v, nil
	case ok && it.rev > rev:
		return v, nil
	case ok:
		c.items[key] = latestItem[V]{rev, v}
		return v, nil
	}
	if old := c.ring[c.next]; old != (objKey{}) {
		delete(c.items, old)
	}
	c.ring[c.next] = key
	c.next = (c.next + 1) % len(c.ring)
	c.items[key] = latestItem[V]{rev, v}
	return v, nil
}
