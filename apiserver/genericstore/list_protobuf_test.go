package genericstore

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestProtobufListItemSplicesStoredBytes checks that a list item made of a
// stored object is spliced from its stored bytes (no decode) and equals the
// protobuf of the object with its resourceVersion, for objects whose
// metadata and revisions take varints of several lengths.
func TestProtobufListItemSplicesStoredBytes(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		name string
		res  *registry.Resource
		obj  runtime.Object
		rev  int64
	}{
		{"small pod", registry.Pods(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}, 7},
		{"pod with long metadata", registry.Pods(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u",
			Labels: map[string]string{"a": long}, Annotations: map[string]string{"b": long}}}, 1234567890123},
		{"job", registry.Jobs(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", GenerateName: "j-", Finalizers: []string{"f"}}}, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, err := Encode(tc.res, tc.obj.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			var it protobufItem
			if err := it.plan(tc.res, value, tc.rev); err != nil {
				t.Fatal(err)
			}
			if it.whole != nil {
				t.Fatal("item was encoded again instead of spliced")
			}
			got := it.appendMsg(nil)
			if len(got) != it.objLen() {
				t.Fatalf("made %d bytes, objLen says %d", len(got), it.objLen())
			}
			want := tc.obj.DeepCopyObject()
			Accessor(want).SetResourceVersion(strconv.FormatInt(tc.rev, 10))
			m := want.(runtime.ProtobufMarshaller)
			msg := make([]byte, m.Size())
			if _, err := m.MarshalTo(msg); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("item\n got %q\nwant %q", got, msg)
			}
		})
	}
}

// TestServesProtobufList: built-in kinds stored in their served version
// are listed from their stored bytes; events.k8s.io events (stored as core
// events) and custom resources are not.
func TestServesProtobufList(t *testing.T) {
	for _, tc := range []struct {
		res  *registry.Resource
		want bool
	}{
		{registry.Pods(), true},
		{registry.Jobs(), true},
		{registry.Events(), true},
		{registry.EventsV1(), false},
	} {
		if got := ServesProtobufList(tc.res); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.res.GVR, got, tc.want)
		}
	}
}
