package genericstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
)

func TestEncodeCacheEncodesOnceAndEvictsOldest(t *testing.T) {
	c := newRingCache[[]byte](2)
	calls := 0
	enc := func(s string) func() ([]byte, error) {
		return func() ([]byte, error) { calls++; return []byte(s), nil }
	}
	v := func(key string) versionKey { return versionKey{key: key, rev: 1} }
	for i := 0; i < 3; i++ {
		if b, _ := c.get(v("a"), enc("A1")); string(b) != "A1" {
			t.Fatalf("got %s", b)
		}
	}
	if calls != 1 {
		t.Fatalf("encoded %d times, want 1", calls)
	}
	_, _ = c.get(v("b"), enc("B1"))
	_, _ = c.get(v("c"), enc("C1")) // evicts a@1
	_, _ = c.get(v("a"), enc("A1"))
	if calls != 4 || len(c.items) != 2 {
		t.Fatalf("calls %d items %d: %v", calls, len(c.items), fmt.Sprint(c.ring))
	}
}

// A sized ring evicts its oldest entries until the new one fits its byte
// budget, and keeps its count bound.
func TestRingCacheEvictsBySize(t *testing.T) {
	c := newSizedRingCache[string](4, 10)
	steps := []struct {
		key  string
		size int
		want []string // cached keys after the step
	}{
		{"a", 4, []string{"a"}},
		{"b", 4, []string{"a", "b"}},
		{"c", 4, []string{"b", "c"}},      // a goes for the bytes
		{"d", 1, []string{"b", "c", "d"}}, // fits
		{"e", 1, []string{"b", "c", "d", "e"}},
		{"f", 1, []string{"c", "d", "e", "f"}}, // b goes for the count
		{"g", 9, []string{"f", "g"}},           // c, d and e go
	}
	for _, st := range steps {
		if _, err := c.getSized(versionKey{key: st.key, rev: 1}, st.size, func() (string, error) { return st.key, nil }); err != nil {
			t.Fatal(err)
		}
		var got []string
		total := 0
		for i := range c.ring {
			if k := c.ring[(c.next+i)%len(c.ring)]; k.key != "" {
				got = append(got, k.key)
				total += c.sizes[(c.next+i)%len(c.ring)]
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(st.want) || len(c.items) != len(st.want) || total != c.bytes {
			t.Errorf("after %s: cached %v (items %d, bytes %d, sizes sum %d), want %v", st.key, got, len(c.items), c.bytes, total, st.want)
		}
	}
}

func TestWatchTransition(t *testing.T) {
	cases := []struct {
		ev                 storage.EventType
		matches, prevMatch bool
		want               watch.EventType
	}{
		{storage.EventCreated, true, false, watch.Added},
		{storage.EventCreated, false, false, ""},
		{storage.EventUpdated, true, true, watch.Modified},
		{storage.EventUpdated, true, false, watch.Added},
		{storage.EventUpdated, false, true, watch.Deleted},
		{storage.EventUpdated, false, false, ""},
		{storage.EventDeleted, false, true, watch.Deleted},
		{storage.EventDeleted, false, false, ""},
	}
	for _, c := range cases {
		if got := transition(c.ev, c.matches, c.prevMatch); got != c.want {
			t.Errorf("%s matches=%v prev=%v: got %q, want %q", c.ev, c.matches, c.prevMatch, got, c.want)
		}
	}
}

func TestLatestCacheKeepsNewestVersionPerKey(t *testing.T) {
	c := newLatestCache[string](2)
	calls := 0
	val := func(s string) func() (string, error) { return func() (string, error) { calls++; return s, nil } }
	for _, step := range []struct {
		key  string
		rev  int64
		want string
	}{{"a", 1, "a1"}, {"a", 1, "a1"}, {"a", 2, "a2"}, {"a", 1, "a1"}, {"a", 2, "a2"}, {"b", 1, "b1"}, {"c", 1, "c1"}, {"a", 2, "a2"}} {
		if got, _ := c.get(objKey{key: step.key}, step.rev, val(fmt.Sprintf("%s%d", step.key, step.rev))); got != step.want {
			t.Fatalf("%s@%d = %s, want %s", step.key, step.rev, got, step.want)
		}
	}
	// a1 once, a2 once, a1 again (older: not kept), b1, c1 (evicts a), a2.
	if calls != 6 || len(c.items) != 2 || c.items[objKey{key: "a"}].rev != 2 {
		t.Fatalf("calls %d items %v", calls, c.items)
	}
}

// Built-in kinds are stored as protobuf (as upstream's etcd holds them),
// custom resources as JSON; either decodes, so a data dir
// written before the switch still reads.
func TestStorageFormats(t *testing.T) {
	pod := testPod("p", "n1")
	pod.Labels = map[string]string{"a": "b"}
	pod.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 22, 1, 2, 3, 456, time.UTC))
	pods := registry.Pods()
	data, err := Encode(pods, pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, protobufMagic) {
		t.Fatalf("pod stored as %q, want protobuf", data[:min(len(data), 20)])
	}
	jsonData, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string][]byte{"protobuf": data, "json": jsonData} {
		obj, err := decodeStored(pods, value, 42)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := obj.(*corev1.Pod)
		if got.ResourceVersion != "42" || got.Labels["a"] != "b" || got.Spec.NodeName != "n1" || got.Kind != "Pod" || got.APIVersion != "v1" {
			t.Fatalf("%s: decoded %+v", name, got)
		}
		// Seconds only, as JSON keeps them: clients must see one value.
		if !got.CreationTimestamp.Equal(&metav1.Time{Time: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)}) {
			t.Fatalf("%s: creationTimestamp %v", name, got.CreationTimestamp)
		}
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, Reason: "R"}
	evData, err := Encode(registry.Events(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(evData, protobufMagic) {
		t.Fatal("events are built-in: want protobuf")
	}
}

// TestStoredEnvelopeAsSerializer: the stored protobuf of a built-in kind
// is byte for byte what apimachinery's protobuf serializer writes (the
// form upstream keeps in etcd), for kinds large and small.
func TestStoredEnvelopeAsSerializer(t *testing.T) {
	pod := testPod("p", "n1")
	pod.Labels = map[string]string{"a": "b"}
	pod.Spec.Containers[0].Args = []string{strings.Repeat("x", 300)} // a raw length of two varint bytes
	objs := map[string]runtime.Object{
		"pod":   pod,
		"event": &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, Reason: "R"},
		"empty": &corev1.ConfigMap{},
	}
	for name, obj := range objs {
		obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(obj).Elem().Name()))
		got, err := encodeProtobuf(obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want bytes.Buffer
		if err := protobuf.NewSerializer(nil, nil).Encode(obj, &want); err != nil {
			t.Fatalf("%s: serializer: %v", name, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s: stored envelope differs from the serializer's:\n got %q\nwant %q", name, got, want.Bytes())
		}
	}
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}
