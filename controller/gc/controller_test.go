package gc

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

var (
	podsRes = DefaultResources()[0]
	jobsRes = DefaultResources()[5]
)

func obj(r Resource, name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: r.GVR.GroupVersion().String(), Kind: r.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), OwnerReferences: owners},
	}
}

func jobRef(name, uid string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID(uid), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(block)}
}

func deleting(o *metav1.PartialObjectMetadata, finalizers ...string) *metav1.PartialObjectMetadata {
	now := metav1.Now()
	o.DeletionTimestamp = &now
	o.Finalizers = finalizers
	return o
}

// start runs a collector over the given objects and returns its client.
func start(t *testing.T, objs ...runtime.Object) *fake.FakeMetadataClient {
	t.Helper()
	scheme := fake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleMetadataClient(scheme, objs...)
	factory := metadatainformer.NewSharedInformerFactory(client, 0)
	c, err := New(controllerctx.Context{Metadata: client, MetadataInformers: factory, Clock: clocktesting.NewFakeClock(time.Now()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()},
		Options{Resources: []Resource{podsRes, jobsRes}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, 2) }()
	t.Cleanup(func() { cancel(); <-done })
	return client
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never saw: %s", what)
	}
}

func get(t *testing.T, c *fake.FakeMetadataClient, r Resource, name string) *metav1.PartialObjectMetadata {
	t.Helper()
	o, err := c.Resource(r.GVR).Namespace("ns").Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestBackgroundDeletesDependentsOfMissingOwner(t *testing.T) {
	c := start(t,
		obj(podsRes, "orphaned", "p1", jobRef("gone", "j-gone", true)),
		obj(podsRes, "owned", "p2", jobRef("live", "j-live", true)),
		obj(podsRes, "shared", "p3", jobRef("gone", "j-gone", true), jobRef("live", "j-live", false)),
		obj(jobsRes, "live", "j-live"),
	)
	eventually(t, "pod of the missing Job deleted", func() bool { return get(t, c, podsRes, "orphaned") == nil })
	eventually(t, "shared pod loses the dangling reference", func() bool {
		p := get(t, c, podsRes, "shared")
		return p != nil && len(p.OwnerReferences) == 1 && p.OwnerReferences[0].UID == "j-live"
	})
	if get(t, c, podsRes, "owned") == nil {
		t.Error("pod of a live Job was deleted")
	}
}

func TestBackgroundAfterOwnerDeleted(t *testing.T) {
	c := start(t, obj(jobsRes, "j", "j1"), obj(podsRes, "p", "p1", jobRef("j", "j1", true)))
	eventually(t, "informers synced", func() bool { return get(t, c, podsRes, "p") != nil })
	if err := c.Resource(jobsRes.GVR).Namespace("ns").Delete(t.Context(), "j", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod deleted after its Job", func() bool { return get(t, c, podsRes, "p") == nil })
}

func TestForegroundDeletesBlockingDependentsThenFinalizer(t *testing.T) {
	c := start(t,
		deleting(obj(jobsRes, "j", "j1"), FinalizerForeground, "other"),
		obj(podsRes, "p1", "p1", jobRef("j", "j1", true)),
		obj(podsRes, "p2", "p2", jobRef("j", "j1", false)),
	)
	eventually(t, "foregroundDeletion removed", func() bool {
		j := get(t, c, jobsRes, "j")
		return j != nil && slices.Equal(j.Finalizers, []string{"other"})
	})
	if get(t, c, podsRes, "p1") != nil {
		t.Error("blocking pod still exists after the owner's finalizer was removed")
	}
	// The non-blocking pod is deleted too, but not necessarily before the
	// owner's finalizer goes: upstream's collector also removes it once no
	// blocking dependent is left, and a pod it reaches after that sees a
	// solid owner. Once "other" is done and the owner gone, it is dangling.
	if err := c.Resource(jobsRes.GVR).Namespace("ns").Delete(t.Context(), "j", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "non-blocking pod deleted too", func() bool { return get(t, c, podsRes, "p2") == nil })
}

func TestOrphanRemovesReferencesThenFinalizer(t *testing.T) {
	c := start(t,
		deleting(obj(jobsRes, "j", "j1"), FinalizerOrphan),
		obj(podsRes, "p1", "p1", jobRef("j", "j1", true)),
		obj(podsRes, "p2", "p2", jobRef("j", "j1", true), jobRef("k", "k1", false)),
		obj(jobsRes, "k", "k1"),
	)
	eventually(t, "orphan finalizer removed", func() bool {
		j := get(t, c, jobsRes, "j")
		return j != nil && len(j.Finalizers) == 0
	})
	p1, p2 := get(t, c, podsRes, "p1"), get(t, c, podsRes, "p2")
	if p1 == nil || len(p1.OwnerReferences) != 0 {
		t.Errorf("p1 = %+v, want kept without ownerReferences", p1)
	}
	if p2 == nil || len(p2.OwnerReferences) != 1 || p2.OwnerReferences[0].UID != "k1" {
		t.Errorf("p2 = %+v, want kept with only k's reference", p2)
	}
}

// A Job with no pods is not kept in the graph; pods created later must
// still find it live, and be collected once it is deleted.
func TestDependentsOfAnOwnerObservedAlone(t *testing.T) {
	c := start(t, obj(jobsRes, "j", "j1"), obj(jobsRes, "k", "k1"))
	for _, p := range []*metav1.PartialObjectMetadata{obj(podsRes, "p", "p1", jobRef("j", "j1", true)), obj(podsRes, "q", "q1", jobRef("k", "k1", true))} {
		if _, err := c.Resource(podsRes.GVR).Namespace("ns").(fake.MetadataClient).CreateFake(p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Resource(jobsRes.GVR).Namespace("ns").Delete(t.Context(), "j", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod deleted after its Job", func() bool { return get(t, c, podsRes, "p") == nil })
	if get(t, c, podsRes, "q") == nil {
		t.Error("pod of a live Job was deleted")
	}
}
