package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDeletePropagation(t *testing.T) {
	e := newTestEnv(t)
	jobs := e.client.BatchV1().Jobs("default")
	orphan, fg, bg := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	cases := []struct {
		name      string
		policy    *metav1.DeletionPropagation
		finalizer string
	}{
		{"default-orphans", nil, metav1.FinalizerOrphanDependents},
		{"orphan", &orphan, metav1.FinalizerOrphanDependents},
		{"foreground", &fg, metav1.FinalizerDeleteDependents},
		{"background", &bg, ""},
	}
	for _, c := range cases {
		if _, err := jobs.Create(e.ctx, testJob(c.name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := jobs.Delete(e.ctx, c.name, metav1.DeleteOptions{PropagationPolicy: c.policy}); err != nil {
			t.Fatalf("%s: delete: %v", c.name, err)
		}
		got, err := jobs.Get(e.ctx, c.name, metav1.GetOptions{})
		if c.finalizer == "" {
			if !apierrors.IsNotFound(err) {
				t.Fatalf("%s: still there: %v", c.name, err)
			}
			continue
		}
		if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != c.finalizer {
			t.Fatalf("%s: got %v finalizers %v err %v", c.name, got.DeletionTimestamp, got.Finalizers, err)
		}
		// Removing the last finalizer deletes the object.
		if _, err := jobs.Patch(e.ctx, c.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s: remove finalizer: %v", c.name, err)
		}
		if _, err := jobs.Get(e.ctx, c.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: still there after finalizer removal: %v", c.name, err)
		}
	}
}

func TestDeleteWithFinalizersAndPreconditions(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrong := types.UID("nope")
	err = cms.Delete(e.ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	if !apierrors.IsConflict(err) || err.Error() != `Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in precondition: nope, UID in object meta: `+string(cm.UID) {
		t.Fatalf("uid precondition: %v", err)
	}
	staleRV := "1"
	if err := cms.Delete(e.ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}}); !apierrors.IsConflict(err) {
		t.Fatalf("rv precondition: %v", err)
	}
	if err := cms.Delete(e.ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(e.ctx, "a", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("object with finalizer: %v %v", got, err)
	}
	// No new finalizers on an object being deleted.
	got.Finalizers = append(got.Finalizers, "example.com/other")
	if _, err := cms.Update(e.ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("adding finalizer while deleting: %v", err)
	}
	got.Finalizers = nil
	if _, err := cms.Update(e.ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(e.ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after last finalizer: %v", err)
	}
}

func TestPodGracefulDeletion(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	if _, err := pods.Create(e.ctx, testPod("unbound", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(e.ctx, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(e.ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod not deleted at once: %v", err)
	}
	bound, err := pods.Create(e.ctx, testPod("bound", "n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(e.ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(e.ctx, "bound", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("bound pod: %v %v", got, err)
	}
	zero := int64(0)
	if err := pods.Delete(e.ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &bound.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(e.ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("force delete: %v", err)
	}
}

func TestDeleteCollection(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	for _, n := range []string{"a", "b", "c"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"del": map[string]string{"a": "y", "b": "y", "c": "n"}[n]}}}
		if _, err := cms.Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(e.ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "del=y"}); err != nil {
		t.Fatal(err)
	}
	l, err := cms.List(e.ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "c" {
		t.Fatalf("left: %v %v", l, err)
	}
}

func TestNamespaceDeletion(t *testing.T) {
	e := newTestEnv(t)
	nss := e.client.CoreV1().Namespaces()
	if _, err := nss.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().ServiceAccounts("t1").Get(e.ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("default service account: %v", err)
	}
	if _, err := e.client.CoreV1().ConfigMaps("t1").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(e.ctx, "t1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Until it is gone it is Terminating and refuses new content.
	ns, err := nss.Get(e.ctx, "t1", metav1.GetOptions{})
	if err == nil {
		if ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("phase = %s", ns.Status.Phase)
		}
		_, err := e.client.CoreV1().ConfigMaps("t1").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y"}}, metav1.CreateOptions{})
		if err == nil || (!apierrors.IsForbidden(err) && !apierrors.IsNotFound(err)) {
			t.Fatalf("create in terminating namespace: %v", err)
		}
	}
	w, err := nss.Watch(e.ctx, metav1.ListOptions{FieldSelector: "metadata.name=t1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		if _, err := nss.Get(e.ctx, "t1", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		nextEvent(t, w)
	}
	if _, err := e.client.CoreV1().ConfigMaps("t1").Get(e.ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("content survived: %v", err)
	}
	if err := nss.Delete(e.ctx, "default", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete default namespace: %v", err)
	}
}

// TestPodWithFinalizerForceDeleted: the agent's zero-grace delete of a pod
// still holding a finalizer leaves it (grace 0, deletionTimestamp now) until
// the finalizer goes.
func TestPodWithFinalizerForceDeleted(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	p := testPod("p", "n1")
	p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(e.ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	graceful, _ := pods.Get(e.ctx, "p", metav1.GetOptions{})
	zero := int64(0)
	if err := pods.Delete(e.ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(e.ctx, "p", metav1.GetOptions{})
	if err != nil || *got.DeletionGracePeriodSeconds != 0 || !got.DeletionTimestamp.Before(graceful.DeletionTimestamp) {
		t.Fatalf("after force delete: %v %v %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds, err)
	}
	if _, err := pods.Patch(e.ctx, "p", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(e.ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod left after finalizer removal: %v", err)
	}
}

func TestNamespaceFinalize(t *testing.T) {
	e := newTestEnv(t)
	nss := e.client.CoreV1().Namespaces()
	if _, err := nss.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Get(e.ctx, "t2", metav1.GetOptions{})
	if err != nil || len(ns.Spec.Finalizers) != 1 || ns.Labels["kubernetes.io/metadata.name"] != "t2" {
		t.Fatalf("new namespace: %+v %v", ns, err)
	}
	ns.Spec.Finalizers = nil
	out, err := nss.Finalize(e.ctx, ns, metav1.UpdateOptions{})
	if err != nil || len(out.Spec.Finalizers) != 0 {
		t.Fatalf("finalize: %v %v", out, err)
	}
}
