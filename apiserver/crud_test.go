package apiserver

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJobCRUD(t *testing.T) {
	e := newTestEnv(t)
	jobs := e.client.BatchV1().Jobs("default")
	created, err := jobs.Create(e.ctx, testJob("pi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Generation != 1 || created.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set metadata: %+v", created.ObjectMeta)
	}
	_, err = jobs.Create(e.ctx, testJob("pi"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) || err.Error() != `jobs.batch "pi" already exists` {
		t.Fatalf("second create: got %v, want AlreadyExists", err)
	}
	got, err := jobs.Get(e.ctx, "pi", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v %v", got, err)
	}
	_, err = jobs.Get(e.ctx, "x", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `jobs.batch "x" not found` {
		t.Fatalf("get missing: %v", err)
	}
	par := int32(3)
	got.Spec.Parallelism = &par
	updated, err := jobs.Update(e.ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Generation != 2 || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update: generation %d rv %s", updated.Generation, updated.ResourceVersion)
	}
	// Stale resourceVersion → Conflict with upstream's message.
	_, err = jobs.Update(e.ctx, got, metav1.UpdateOptions{})
	want := `Operation cannot be fulfilled on jobs.batch "pi": the object has been modified; please apply your changes to the latest version and try again`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("stale update: got %v", err)
	}
	// Status update changes only status.
	updated.Status.Active = 2
	updated.Spec.Parallelism = nil
	st, err := jobs.UpdateStatus(e.ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if st.Status.Active != 2 || st.Spec.Parallelism == nil || *st.Spec.Parallelism != 3 {
		t.Fatalf("status update: active %d parallelism %v", st.Status.Active, st.Spec.Parallelism)
	}
	// Main update keeps status.
	st.Status.Active = 0
	main, err := jobs.Update(e.ctx, st, metav1.UpdateOptions{})
	if err != nil || main.Status.Active != 2 {
		t.Fatalf("main update changed status: %v %v", main.Status.Active, err)
	}
	list, err := jobs.List(e.ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %v %v", list, err)
	}
	bg := metav1.DeletePropagationBackground
	if err := jobs.Delete(e.ctx, "pi", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := jobs.Get(e.ctx, "pi", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestInitialNamespacesAndServiceAccounts(t *testing.T) {
	e := newTestEnv(t)
	for _, ns := range InitialNamespaces() {
		n, err := e.client.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
		if err != nil || n.Status.Phase != "Active" {
			t.Fatalf("namespace %s: %v %v", ns, n, err)
		}
		if _, err := e.client.CoreV1().ServiceAccounts(ns).Get(e.ctx, "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("default sa in %s: %v", ns, err)
		}
	}
}
