package apiserver

import (
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// An informer on LocalListerWatcher lists and watches the store like one
// over HTTP: selectors from its tweak, selector transitions as
// ADDED/DELETED, metadata-only objects when asked.
func TestLocalListerWatcherInformers(t *testing.T) {
	env := newTestEnv(t)
	pods := env.client.CoreV1().Pods("default")
	for _, name := range []string{"a", "b"} {
		if _, err := pods.Create(env.ctx, testPod(name, "n1"), metav1.CreateOptions{FieldManager: "tester"}); err != nil {
			t.Fatal(err)
		}
	}
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	selected, err := env.srv.LocalListerWatcher(podsGVR, "default", false, func(o *metav1.ListOptions) { o.LabelSelector = "team=x" })
	if err != nil {
		t.Fatal(err)
	}
	meta, err := env.srv.LocalListerWatcher(podsGVR, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	typed := cache.NewSharedIndexInformer(selected.(cache.ListerWatcher), &corev1.Pod{}, 0, cache.Indexers{})
	partial := cache.NewSharedIndexInformer(meta.(cache.ListerWatcher), &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	go typed.Run(env.ctx.Done())
	go partial.Run(env.ctx.Done())
	if !cache.WaitForCacheSync(env.ctx.Done(), typed.HasSynced, partial.HasSynced) {
		t.Fatal("informers did not sync")
	}
	if n := len(typed.GetStore().List()); n != 0 {
		t.Fatalf("selected informer has %d pods before any matches, want 0", n)
	}
	if n := len(partial.GetStore().List()); n != 2 {
		t.Fatalf("metadata informer has %d pods, want 2", n)
	}
	label := func(value string) {
		t.Helper()
		patch := `{"metadata":{"labels":{"team":` + value + `}}}`
		if _, err := pods.Patch(env.ctx, "b", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "tester"}); err != nil {
			t.Fatal(err)
		}
	}
	label(`"x"`) // starts matching: ADDED
	waitFor(t, func() bool {
		obj, ok, _ := typed.GetStore().GetByKey("default/b")
		return ok && obj.(*corev1.Pod).Labels["team"] == "x"
	})
	waitFor(t, func() bool {
		obj, ok, _ := partial.GetStore().GetByKey("default/b")
		return ok && obj.(*metav1.PartialObjectMetadata).Labels["team"] == "x"
	})
	// Informers get no managedFields (as kube-controller-manager trims
	// them); the API still serves them.
	obj, _, _ := typed.GetStore().GetByKey("default/b")
	pm, _, _ := partial.GetStore().GetByKey("default/b")
	if mf := obj.(*corev1.Pod).ManagedFields; mf != nil {
		t.Errorf("typed informer's pod has managedFields %v, want none", mf)
	}
	if mf := pm.(*metav1.PartialObjectMetadata).ManagedFields; mf != nil {
		t.Errorf("metadata informer's pod has managedFields %v, want none", mf)
	}
	if got, err := pods.Get(env.ctx, "b", metav1.GetOptions{}); err != nil || len(got.ManagedFields) == 0 {
		t.Errorf("GET pod b: managedFields %v (err %v), want the server's", got.ManagedFields, err)
	}
	label(`null`) // stops matching: DELETED
	waitFor(t, func() bool { _, ok, _ := typed.GetStore().GetByKey("default/b"); return !ok })
	if err := pods.Delete(env.ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, ok, _ := partial.GetStore().GetByKey("default/a"); return !ok })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWithoutManagedFields: the informers' object is the server's less
// its managedFields, sharing the rest, and leaves the original (the
// server's shared decoded object) whole.
func TestWithoutManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	pod := testPod("p", "n1")
	pod.ManagedFields = mf
	job := testJob("j")
	job.ManagedFields = mf
	u := &unstructured.Unstructured{}
	u.SetName("u")
	u.SetManagedFields(mf)
	for _, obj := range []runtime.Object{pod, job, u} {
		genericstore.Accessor(obj).SetLabels(map[string]string{"x": "1"})
		orig := obj.DeepCopyObject()
		out := withoutManagedFields(obj)
		if out == obj {
			t.Fatalf("%T: got the original, want a copy", obj)
		}
		if !apiequality.Semantic.DeepEqual(obj, orig) {
			t.Fatalf("%T: the original changed", obj)
		}
		if got := genericstore.Accessor(out).GetManagedFields(); got != nil {
			t.Fatalf("%T: copy keeps managedFields %v", obj, got)
		}
		want := orig.DeepCopyObject()
		genericstore.Accessor(want).SetManagedFields(nil)
		if !apiequality.Semantic.DeepEqual(out, want) {
			t.Fatalf("%T: copy %+v, want %+v", obj, out, want)
		}
	}
}
