package genericstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The watch decode of a pod update from its previous version's decoded
// object is the full decode of the stored value, whatever changed, and
// shares the parts that did not change.
func TestDecodedEventIsTheFullDecode(t *testing.T) {
	res := registry.Pods()
	base := testPod("p", "")
	base.UID, base.Finalizers = "uid-1", []string{"batch.kubernetes.io/job-tracking"}
	base.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 26, 13, 0, 0, 123456789, time.UTC))
	base.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	encode := func(t *testing.T, pod *corev1.Pod) []byte {
		data, err := Encode(res, pod.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name       string
		edit       func(p *corev1.Pod)
		jsonValue  bool
		prevCached bool
		shared     func(cur, prev *corev1.Pod) bool
	}{
		{"status patch", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 26, 13, 0, 1, 5, time.UTC))}}
		}, false, true, func(cur, prev *corev1.Pod) bool { return &cur.Spec.Containers[0] == &prev.Spec.Containers[0] }},
		{"finalizer removal", func(p *corev1.Pod) { p.Finalizers = []string{} }, false, true,
			func(cur, prev *corev1.Pod) bool { return &cur.Spec.Containers[0] == &prev.Spec.Containers[0] }},
		{"binding", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}, false, true, func(cur, prev *corev1.Pod) bool { return &cur.ManagedFields[0] == &prev.ManagedFields[0] }},
		{"unchanged bytes", func(p *corev1.Pod) {}, false, true, func(cur, prev *corev1.Pod) bool { return &cur.Spec.Containers[0] == &prev.Spec.Containers[0] }},
		{"previous version not cached", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false, false, nil},
		{"stored as JSON", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			prevValue := encode(t, base)
			next := base.DeepCopy()
			tc.edit(next)
			value := encode(t, next)
			if tc.jsonValue {
				var err error
				if prevValue, err = json.Marshal(base); err != nil {
					t.Fatal(err)
				}
			}
			prevKV := storage.KeyValue{Key: "/registry/core/pods/default/p", Value: prevValue, CreateRevision: 5, ModRevision: 7}
			kv := storage.KeyValue{Key: prevKV.Key, Value: value, CreateRevision: 5, ModRevision: 9}
			var prev runtime.Object
			if tc.prevCached {
				var err error
				if prev, err = s.DecodedShared(res, prevKV); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.decodedEvent(res, storage.Event{Type: storage.EventUpdated, KV: kv, PrevKV: &prevKV})
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeKV(res, kv)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded from the previous version:\n%#v\nfull decode:\n%#v", got, want)
			}
			if again, _ := s.DecodedShared(res, kv); again != got {
				t.Error("the decoded version is not the one the cache shares")
			}
			if tc.shared != nil && !tc.shared(got.(*corev1.Pod), prev.(*corev1.Pod)) {
				t.Error("an unchanged part was decoded again instead of shared")
			}
		})
	}
}

// A value that is not a plain protobuf pod is not split.
func TestSplitPodRefusesOtherValues(t *testing.T) {
	for name, v := range map[string][]byte{
		"json":          []byte(`{"kind":"Pod"}`),
		"truncated":     append(append([]byte{}, protobufMagic...), 0x12, 0x05, 'a'),
		"no raw field":  append([]byte{}, protobufMagic...),
		"unknown field": podValue(t, 0x22, 0x00),
		"repeated spec": podValue(t, 0x0a, 0x00, 0x12, 0x00, 0x12, 0x00, 0x1a, 0x00),
		"varint field":  podValue(t, 0x08, 0x01),
		"missing field": podValue(t, 0x0a, 0x00, 0x12, 0x00),
	} {
		if _, ok := splitPod(v); ok {
			t.Errorf("%s: split", name)
		}
	}
	if _, ok := splitPod(podValue(t, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00)); !ok {
		t.Error("a plain pod was not split")
	}
}

// podValue is a stored value whose envelope's raw field is raw.
func podValue(t *testing.T, raw ...byte) []byte {
	t.Helper()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: raw}
	env, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, protobufMagic...), env...)
}

// BenchmarkDecodePodStatusUpdate decodes the version a status patch wrote,
// in full and from the previous version's decoded object.
func BenchmarkDecodePodStatusUpdate(b *testing.B) {
	res := registry.Pods()
	pod := testPod("p", "n1") // shaped like a Job's pod: owner, finalizer, managed fields, status
	pod.UID, pod.Finalizers = "uid-1", []string{"batch.kubernetes.io/job-tracking"}
	pod.Labels["batch.kubernetes.io/job-completion-index"] = "7"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "uid-j"}}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "job-controller", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"batch.kubernetes.io/job-tracking\"":{}},"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"uid-j\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}},"f:restartPolicy":{}}}`)},
		{Manager: "agent", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{},"f:phase":{}}}`)},
	}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", Value: "7"}}
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "true"}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	prevValue, err := Encode(res, pod.DeepCopy())
	if err != nil {
		b.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: true}}
	value, err := Encode(res, pod)
	if err != nil {
		b.Fatal(err)
	}
	prev, err := decodeStored(res, prevValue, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeStored(res, value, 2); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from previous", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodePodFrom(prev.(*corev1.Pod), prevValue, value); !ok {
				b.Fatal("not decoded")
			}
		}
	})
}
