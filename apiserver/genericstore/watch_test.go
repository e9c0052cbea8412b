package genericstore

import (
	"net/url"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/install"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Field-selected watchers classify a pod's events with selector
// transitions, and share one field set per version: made once for all of
// them, not per watcher and event.
func TestClassifySharesFieldSets(t *testing.T) {
	res := registry.Pods()
	made := 0
	podFields := res.Fields
	res.Fields = func(obj runtime.Object) fields.Set { made++; return podFields(obj) }
	s := newTestStore(t)

	versions := []*corev1.Pod{testPod("p", ""), testPod("p", "n1"), testPod("p", "n1")}
	versions[2].Status.Phase = corev1.PodRunning
	kvs := make([]storage.KeyValue, len(versions))
	for i, pod := range versions {
		value, err := Encode(res, pod)
		if err != nil {
			t.Fatal(err)
		}
		kvs[i] = storage.KeyValue{Key: ObjectKey(res, "default", "p"), Value: value, CreateRevision: 1, ModRevision: int64(i + 1)}
	}
	events := []storage.Event{
		{Type: storage.EventCreated, KV: kvs[0]},
		{Type: storage.EventUpdated, KV: kvs[1], PrevKV: &kvs[0]}, // bound to n1
		{Type: storage.EventUpdated, KV: kvs[2], PrevKV: &kvs[1]}, // running
		{Type: storage.EventDeleted, KV: kvs[2], PrevKV: &kvs[2]},
	}
	watchers := []struct {
		selector string
		want     []watch.EventType
	}{
		{"spec.nodeName=n1", []watch.EventType{"", watch.Added, watch.Modified, watch.Deleted}},
		{"spec.nodeName=", []watch.EventType{watch.Added, watch.Deleted, "", ""}},
		{"status.phase=Running", []watch.EventType{"", "", watch.Added, watch.Deleted}},
		{"spec.nodeName=n1,status.phase!=Running", []watch.EventType{"", watch.Added, watch.Deleted, ""}},
	}
	filters := make([]*Filter, len(watchers))
	for i, w := range watchers {
		f, err := ParseFilter(res, url.Values{"fieldSelector": {w.selector}})
		if err != nil {
			t.Fatal(err)
		}
		filters[i] = f
	}
	made = 0 // ParseFilter makes one to check the fields exist
	for e, ev := range events {
		for i, w := range watchers {
			typ, _, err := s.Classify(res, filters[i], ev)
			if err != nil {
				t.Fatal(err)
			}
			if typ != w.want[e] {
				t.Errorf("event %d, watcher %q: %q, want %q", e, w.selector, typ, w.want[e])
			}
		}
	}
	if made != len(versions) {
		t.Errorf("%d field sets made for %d versions and %d watchers, want one per version", made, len(versions), len(watchers))
	}
}

// containerResults is the ContainerResult resource as installed.
func containerResults(t *testing.T) *registry.Resource {
	t.Helper()
	objs, err := install.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetName() != "containerresults.results.batchlet.dev" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			t.Fatal(err)
		}
		crd.Status.AcceptedNames = crd.Spec.Names // as the CRD loop accepts them
		rs, err := registry.CustomResources(crd)
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	t.Fatal("no ContainerResult CRD in install")
	return nil
}

// A custom resource version's metadata read alone is the metadata of its
// full decode; once the full decode is cached, it is that object.
func TestMetadataOfIsTheFullDecodesMetadata(t *testing.T) {
	res := containerResults(t)
	s := newTestStore(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "results.batchlet.dev/v1", "kind": "ContainerResult",
		"metadata": map[string]any{"name": "p.c.0", "namespace": "default", "uid": "u-1", "generation": int64(1),
			"creationTimestamp": "2026-11-26T10:00:00Z", "labels": map[string]any{"batch.kubernetes.io/job-name": "j"},
			"annotations": map[string]any{"a": "<&>"}, "finalizers": []any{"f"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu", "controller": true}},
			"managedFields": []any{map[string]any{"manager": "agent", "operation": "Update", "apiVersion": "results.batchlet.dev/v1",
				"time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}}},
		"spec": map[string]any{"podName": "p", "exitCode": int64(0), "logTail": "hello\n"},
	}}
	if _, err := s.Create(t.Context(), res, u, nil); err != nil {
		t.Fatal(err)
	}
	kv, err := s.Backend().Get(t.Context(), ObjectKey(res, "default", "p.c.0"))
	if err != nil {
		t.Fatal(err)
	}
	alone, ok, err := s.MetadataOf(res, kv)
	if err != nil || !ok {
		t.Fatalf("MetadataOf: ok %v, err %v", ok, err)
	}
	full, err := s.DecodedShared(res, kv)
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.ObjectMeta{}
	md := full.(*unstructured.Unstructured).Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &want); err != nil {
		t.Fatal(err)
	}
	if got := alone.(*metav1.PartialObjectMetadata).ObjectMeta; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("metadata alone %+v\nwant the full decode's %+v", got, want)
	}
	if cached, _, _ := s.MetadataOf(res, kv); cached != full {
		t.Errorf("with the full decode cached, MetadataOf = %T, want the cached object", cached)
	}
	pod := testPod("p", "")
	if _, err := s.Create(t.Context(), registry.Pods(), pod, nil); err != nil {
		t.Fatal(err)
	}
	podKV, err := s.Backend().Get(t.Context(), ObjectKey(registry.Pods(), "default", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.MetadataOf(registry.Pods(), podKV); ok || err != nil {
		t.Errorf("MetadataOf a protobuf pod: ok %v, err %v; want not ok", ok, err)
	}
}
