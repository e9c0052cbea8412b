package genericstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Protobuf list answers are assembled from the stored bytes: a built-in
// object is stored as the protobuf of its served form less its
// resourceVersion (the storage revision), so an item of the list is the
// stored message with the revision spliced into its metadata, with no
// decode or encode. The bytes equal what the protobuf serializer writes for
// the decoded list (TestProtobufListMatchesSerializer).

// protobuf field tags (field number << 3 | wire type 2, length-delimited).
const (
	tagMetadata        = 1<<3 | 2 // an object's metadata, a list's metadata
	tagListItems       = 2<<3 | 2 // a list's items
	tagUnknownRaw      = 2<<3 | 2 // runtime.Unknown's raw message
	tagResourceVersion = 6<<3 | 2 // ObjectMeta.resourceVersion
)

// ServesProtobufList says whether lists of res can be answered in protobuf
// from the stored bytes: built-in kinds with a protobuf form stored in their
// served version.
func ServesProtobufList(res *registry.Resource) bool {
	if res.CustomResource || res.ToStorage != nil || res.FromStorage != nil || res.NewList == nil {
		return false
	}
	_, itemOK := res.New().(protoMessage)
	_, listOK := res.NewList().(runtime.ProtobufMarshaller)
	return itemOK && listOK
}

// ProtobufList answers a list of res (which must pass ServesProtobufList)
// in protobuf, honouring selectors, limit, continue and resourceVersion as
// List does. Items come from the cache of encoded items (made there from
// the stored bytes on a miss). An error means nothing was written: the
// caller answers with it.
func (s *Store) ProtobufList(ctx context.Context, w http.ResponseWriter, res *registry.Resource, namespace string, f *Filter, limit int64, cont, rv, rvMatch string) error {
	sc := newListScan(s, res, f, limit, false)
	sc.encoded, sc.arena = true, &copyArena{}
	sc.items = s.scanItems()
	defer func() { s.releaseScanItems(sc.items) }()
	if err := s.runScan(ctx, sc, namespace, cont, rv, rvMatch); err != nil {
		return err
	}
	for i := range sc.items {
		it := &sc.items[i]
		if it.pb != nil {
			continue
		}
		kv := it.st.kv
		var err error
		if it.pb, err = s.encodedItemOf(res, sc.view, []byte(kv.Key), kv); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("%s %s: %w", res.Kind, kv.Key, err))
		}
	}
	return s.writeProtobufList(w, res, sc.items, sc.listMeta())
}

// writeProtobufList answers with items (each with its encoded item) as a
// protobuf list with lm.
func (s *Store) writeProtobufList(w http.ResponseWriter, res *registry.Resource, items []ListItem, lm metav1.ListMeta) error {
	prefix, list0, suffix, err := protobufListEnvelope(res, lm)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	size := len(list0)
	for _, it := range items {
		size += 1 + uvarintLen(uint64(len(it.pb.msg))) + len(it.pb.msg)
	}
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(http.StatusOK)
	bw := s.listBuffer(w)
	var scratch [binary.MaxVarintLen64]byte
	_, _ = bw.Write(prefix)
	_ = bw.WriteByte(tagUnknownRaw)
	_, _ = bw.Write(binary.AppendUvarint(scratch[:0], uint64(size)))
	_, _ = bw.Write(list0)
	for _, it := range items {
		_ = bw.WriteByte(tagListItems)
		_, _ = bw.Write(binary.AppendUvarint(scratch[:0], uint64(len(it.pb.msg))))
		_, _ = bw.Write(it.pb.msg)
	}
	_, _ = bw.Write(suffix)
	_ = bw.Flush() // a failed write is a client gone: nothing to answer
	s.releaseListBuffer(bw)
	return nil
}

// protobufListEnvelope encodes res's empty list with lm and splits the
// answer around the list message: what precedes the raw field's tag, the
// list message (its metadata only), and what follows it. Items go at the
// list message's end.
func protobufListEnvelope(res *registry.Resource, lm metav1.ListMeta) (prefix, list0, suffix []byte, err error) {
	list, err := emptyList(res, lm)
	if err != nil {
		return nil, nil, nil, err
	}
	env, err := encodeProtobuf(list)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("encode %sList: %w", res.Kind, err)
	}
	b := env[len(protobufMagic):]
	for off := 0; off < len(b); {
		start := off
		tag, n := binary.Uvarint(b[off:])
		if n <= 0 || tag&7 != 2 {
			break
		}
		off += n
		l, n := binary.Uvarint(b[off:])
		if n <= 0 || l > uint64(len(b)-off-n) {
			break
		}
		off += n
		if tag == tagUnknownRaw {
			p := len(protobufMagic)
			return env[:p+start], b[off : off+int(l)], b[off+int(l):], nil
		}
		off += int(l)
	}
	return nil, nil, nil, fmt.Errorf("unexpected %sList protobuf envelope", res.Kind)
}

// emptyList is res's list type with lm and no items, with its apiVersion
// and kind.
func emptyList(res *registry.Resource, lm metav1.ListMeta) (runtime.Object, error) {
	list := res.NewList()
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	if err := meta.SetList(list, []runtime.Object{}); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	la.SetRemainingItemCount(lm.RemainingItemCount)
	return list, nil
}

// protobufItem is one item of a protobuf list: a stored message (obj)
// whose metadata, at obj[mstart:mend], gets rv spliced in at rvOff, or,
// for a stored message not in the expected shape, whole (its encoding
// made again from the decoded object).
type protobufItem struct {
	obj                 []byte
	mstart, mend, rvOff int
	rv                  string
	whole               []byte
}

// plan prepares the item of a stored value at revision rev.
func (it *protobufItem) plan(res *registry.Resource, value []byte, rev int64) error {
	it.rv = strconv.FormatInt(rev, 10)
	if hasProtobufMagic(value) {
		if raw, err := envelopeRaw(value[len(protobufMagic):]); err == nil && it.locate(raw) {
			it.obj = raw
			return nil
		}
	}
	obj, err := decodeStored(res, value, rev)
	if err != nil {
		return err
	}
	m, ok := obj.(runtime.ProtobufMarshaller)
	if !ok {
		return fmt.Errorf("%T has no protobuf form", obj)
	}
	it.whole = make([]byte, m.Size())
	n, err := m.MarshalTo(it.whole)
	it.whole = it.whole[:n]
	return err
}

// locate finds in obj, an object's message, its metadata (field 1) holding
// fields 1 to 5 (name to uid: strings, always encoded) and then an empty
// resourceVersion; false for any other shape.
func (it *protobufItem) locate(obj []byte) bool {
	if len(obj) == 0 || obj[0] != tagMetadata {
		return false
	}
	mlen, n := binary.Uvarint(obj[1:])
	if n <= 0 || mlen > uint64(len(obj)-1-n) {
		return false
	}
	it.mstart, it.mend = 1+n, 1+n+int(mlen)
	md := obj[it.mstart:it.mend]
	off := 0
	for field := byte(1); field <= 5; field++ {
		if off >= len(md) || md[off] != field<<3|2 {
			return false
		}
		l, n := binary.Uvarint(md[off+1:])
		if n <= 0 || l > uint64(len(md)-off-1-n) {
			return false
		}
		off += 1 + n + int(l)
	}
	if off+2 > len(md) || md[off] != tagResourceVersion || md[off+1] != 0 {
		return false
	}
	it.rvOff = it.mstart + off
	return true
}

// metaLen is the length of the item's metadata with rv in it (a length
// byte 0 becomes len(rv), below 128).
func (it *protobufItem) metaLen() int { return it.mend - it.mstart + len(it.rv) }

// objLen is the length of the item's message.
func (it *protobufItem) objLen() int {
	if it.whole != nil {
		return len(it.whole)
	}
	return 1 + uvarintLen(uint64(it.metaLen())) + it.metaLen() + len(it.obj) - it.mend
}

// appendMsg appends the item's message to b.
func (it *protobufItem) appendMsg(b []byte) []byte {
	if it.whole != nil {
		return append(b, it.whole...)
	}
	b = append(b, tagMetadata)
	b = binary.AppendUvarint(b, uint64(it.metaLen()))
	b = append(b, it.obj[it.mstart:it.rvOff]...)
	b = append(b, tagResourceVersion, byte(len(it.rv)))
	b = append(b, it.rv...)
	return append(b, it.obj[it.rvOff+2:]...)
}

func hasProtobufMagic(value []byte) bool {
	return len(value) >= len(protobufMagic) && string(value[:len(protobufMagic)]) == string(protobufMagic)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
