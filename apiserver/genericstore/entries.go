package genericstore

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apimachinery/pkg/runtime"
)

// StoredEntry is what the server keeps per stored object version: its JSON
// as served (with apiVersion and kind) and its labels. Entries are shared
// and must not be modified.
type StoredEntry struct {
	data   []byte
	labels map[string]string
}

// JSON is the object version as served; it must not be modified.
func (e *StoredEntry) JSON() []byte { return e.data }

// Entry returns the cached entry of a stored version. obj, when not nil, is
// kv already decoded (saving a decode on a miss); it is only read.
func (s *Store) Entry(res *registry.Resource, kv storage.KeyValue, obj runtime.Object) (*StoredEntry, error) {
	return s.entCache.get(objKey{viewOf(res), kv.Key}, kv.ModRevision, func() (*StoredEntry, error) {
		if obj == nil {
			var err error
			if obj, err = decodeKV(res, kv); err != nil {
				return nil, err
			}
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", res.Kind, err)
		}
		return &StoredEntry{data: data, labels: Accessor(obj).GetLabels()}, nil
	})
}

// viewOf names one resource's view of a store: its group and version
// (a CRD's versions share a store and differ in apiVersion).
func viewOf(res *registry.Resource) string { return res.GVR.Group + "/" + res.GVR.Version }

// itemPrefix is the leading `{"kind":...,"apiVersion":...,` of the served
// form of res's objects, which built-in lists leave out of their items
// (custom resources keep it, being unstructured upstream); nil keeps all.
func itemPrefix(res *registry.Resource) []byte {
	if res.GVR.Group == "jobset.x-k8s.io" || res.CustomResource {
		return nil
	}
	gvk := res.GVK()
	return []byte(`{"kind":"` + gvk.Kind + `","apiVersion":"` + gvk.GroupVersion().String() + `",`)
}

// writeListItem writes the JSON of one list item: data (which starts with
// prefix) less prefix.
func writeListItem(w *bufio.Writer, prefix, data []byte) {
	if len(prefix) > 0 {
		_ = w.WriteByte('{')
		data = data[len(prefix):]
	}
	_, _ = w.Write(data)
}

// cachedEntry returns the cached entry of the version rev of the object
// stored under key in view (viewOf its resource), or nil when the cache
// does not hold that version.
func (s *Store) cachedEntry(view string, key []byte, rev int64) *StoredEntry {
	ent, _ := s.entCache.peek(view, key, rev)
	return ent
}

// peek returns the cached value of (group, key) if it is the one for rev.
// The key is looked up without being copied into a string.
func (c *latestCache[V]) peek(group string, key []byte, rev int64) (V, bool) {
	c.mu.Lock()
	it, ok := c.items[objKey{group, string(key)}]
	c.mu.Unlock()
	if ok && it.rev == rev {
		return it.v, true
	}
	var zero V
	return zero, false
}
