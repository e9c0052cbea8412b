package gc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/results"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeDiscovery serves fixed resource lists.
type fakeDiscovery struct{ lists []*metav1.APIResourceList }

func (d *fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.lists, nil
}

var widgetsRes = Resource{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}

func discoveryWith(extra ...metav1.APIResource) *fakeDiscovery {
	all := []string{"create", "delete", "get", "list", "watch"}
	return &fakeDiscovery{lists: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "patch"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: append([]metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
			{Name: "readonly", Kind: "ReadOnly", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		}, extra...)},
		{GroupVersion: results.GV.String(), APIResources: []metav1.APIResource{
			{Name: results.Resource, Kind: results.Kind, Namespaced: true, Verbs: all},
		}},
	}}
}

func TestDeletableResources(t *testing.T) {
	c := &Controller{resources: []Resource{podsRes, jobsRes}}
	got := c.deletableResources(discoveryWith().lists)
	if len(got) != 1 || got[widgetsRes.GVR] != widgetsRes {
		t.Fatalf("deletable resources = %v, want only widgets (pods configured, events and containerresults ignored, subresources and read-only skipped)", got)
	}
}

func widgetRef(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: name, UID: k8stypes.UID(uid), Controller: ptr.To(true)}
}

func TestDiscoveredOwnerKindsAreCollected(t *testing.T) {
	scheme := fake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{
		obj(widgetsRes, "live", "w-live"),
		obj(podsRes, "of-live", "p1", widgetRef("live", "w-live")),
		obj(podsRes, "of-gone", "p2", widgetRef("gone", "w-gone")),
	}
	client := fake.NewSimpleMetadataClient(scheme, objs...)
	// The fake's watches replay nothing: a delete made before the Widget
	// informer's watch exists would be lost, so the test deletes only
	// once that watch is open.
	widgetsWatched := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("widgets", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err == nil {
			once.Do(func() { close(widgetsWatched) })
		}
		return true, w, err
	})
	c, err := New(controllerctx.Context{Metadata: client, MetadataInformers: metadatainformer.NewSharedInformerFactory(client, 0),
		Clock: clocktesting.NewFakeClock(time.Now()), Registerer: prometheus.NewRegistry()}, Options{Resources: []Resource{podsRes, jobsRes}})
	if err != nil {
		t.Fatal(err)
	}
	c.WatchDiscovered(discoveryWith(), time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, 2) }()
	t.Cleanup(func() { cancel(); <-done })

	eventually(t, "pod of the missing Widget deleted", func() bool { return get(t, client, podsRes, "of-gone") == nil })
	select {
	case <-widgetsWatched:
	case <-time.After(10 * time.Second):
		t.Fatal("the Widget informer never watched")
	}
	if err := client.Resource(widgetsRes.GVR).Namespace("ns").Delete(t.Context(), "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod deleted after its Widget", func() bool { return get(t, client, podsRes, "of-live") == nil })
}

// localFactory is a metadata informer factory that makes local informers
// of the resources in local.
type localFactory struct {
	metadatainformer.SharedInformerFactory
	local map[schema.GroupVersionResource]cache.SharedIndexInformer
}

func (f localFactory) NewInformer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	inf, ok := f.local[gvr]
	return inf, ok
}

// A discovered resource's monitor watches through the factory's local
// informer when it has one, else over the metadata client.
func TestMonitorInformerIsLocalWhenServedLocally(t *testing.T) {
	client := fake.NewSimpleMetadataClient(fake.NewTestScheme())
	local := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	f := localFactory{metadatainformer.NewSharedInformerFactory(client, 0), map[schema.GroupVersionResource]cache.SharedIndexInformer{widgetsRes.GVR: local}}
	for _, tc := range []struct {
		name      string
		factory   metadatainformer.SharedInformerFactory
		gvr       schema.GroupVersionResource
		wantLocal bool
	}{
		{"served locally", f, widgetsRes.GVR, true},
		{"not served locally", f, podsRes.GVR, false},
		{"factory without local informers", f.SharedInformerFactory, widgetsRes.GVR, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{client: client, factory: tc.factory}
			inf := c.monitorInformer(tc.gvr)
			if inf == nil {
				t.Fatal("no informer")
			}
			if got := inf == local; got != tc.wantLocal {
				t.Errorf("local informer: %v, want %v", got, tc.wantLocal)
			}
		})
	}
}
