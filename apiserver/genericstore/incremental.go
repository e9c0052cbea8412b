package genericstore

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// decodedEvent returns the shared decoded object of ev's version. An
// update of a pod whose previous version is still decoded in the cache
// decodes only the parts that changed: most writes change one of a pod's
// metadata, spec and status (the agent's status patch, the Job
// controller's finalizer removal), and the parts whose stored bytes are
// those of the previous version are taken from its decoded object —
// decoding the same bytes gives the same values, so the result is the
// full decode's. Both objects are shared and read-only, so sharing parts
// between them is safe.
func (s *Store) decodedEvent(res *registry.Resource, ev storage.Event) (runtime.Object, error) {
	if ev.Type != storage.EventUpdated || ev.PrevKV == nil || res.FromStorage != nil {
		return s.DecodedShared(res, ev.KV)
	}
	return s.decCache.get(versionOf(res, "", ev.KV), func() (runtime.Object, error) {
		prev, ok := s.decCache.peek(versionOf(res, "", *ev.PrevKV))
		if !ok {
			return decodeKV(res, ev.KV)
		}
		prevPod, ok := prev.(*corev1.Pod)
		if !ok {
			return decodeKV(res, ev.KV)
		}
		pod, ok := decodePodFrom(prevPod, ev.PrevKV.Value, ev.KV.Value)
		if !ok {
			return decodeKV(res, ev.KV)
		}
		pod.SetGroupVersionKind(res.GVK())
		pod.ResourceVersion = strconv.FormatInt(ev.KV.ModRevision, 10)
		return pod, nil
	})
}

// podParts are the stored protobuf bytes of a pod's three fields.
type podParts struct{ meta, spec, status []byte }

// decodePodFrom decodes the stored pod value from prevPod, the decoded
// object of the stored value prevValue: each of metadata, spec and status
// whose bytes are unchanged is prevPod's (shared), the others are
// decoded. ok is false when either value is not a plain protobuf pod (each
// field once, no other fields): the caller decodes all of it.
func decodePodFrom(prevPod *corev1.Pod, prevValue, value []byte) (*corev1.Pod, bool) {
	prev, ok := splitPod(prevValue)
	if !ok {
		return nil, false
	}
	cur, ok := splitPod(value)
	if !ok {
		return nil, false
	}
	pod := &corev1.Pod{}
	if bytes.Equal(cur.meta, prev.meta) {
		pod.ObjectMeta = prevPod.ObjectMeta
	} else if pod.ObjectMeta.Unmarshal(cur.meta) != nil {
		return nil, false
	}
	if bytes.Equal(cur.spec, prev.spec) {
		pod.Spec = prevPod.Spec
	} else if pod.Spec.Unmarshal(cur.spec) != nil {
		return nil, false
	}
	if bytes.Equal(cur.status, prev.status) {
		pod.Status = prevPod.Status
	} else if pod.Status.Unmarshal(cur.status) != nil {
		return nil, false
	}
	return pod, true
}

// splitPod finds the three fields of a stored protobuf pod (1 metadata,
// 2 spec, 3 status, each length-delimited, as the generated code writes
// them all). Anything else — JSON, a repeated or unknown field — is not
// ok.
func splitPod(value []byte) (podParts, bool) {
	var p podParts
	if !bytes.HasPrefix(value, protobufMagic) {
		return p, false
	}
	b, err := envelopeRaw(value[len(protobufMagic):])
	if err != nil || b == nil {
		return p, false
	}
	var seen [4]bool
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 || tag&7 != 2 {
			return p, false
		}
		field := tag >> 3
		if field < 1 || field > 3 || seen[field] {
			return p, false
		}
		seen[field] = true
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return p, false
		}
		part := b[n : n+int(l)]
		b = b[n+int(l):]
		switch field {
		case 1:
			p.meta = part
		case 2:
			p.spec = part
		case 3:
			p.status = part
		}
	}
	return p, seen[1] && seen[2] && seen[3]
}
