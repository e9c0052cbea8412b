package genericstore

import (
	"net/url"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
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
