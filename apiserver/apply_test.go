package apiserver

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
)

func TestServerSideApply(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	cfg := corev1apply.ConfigMap("a", "default").WithData(map[string]string{"x": "1"})
	got, err := cms.Apply(e.ctx, cfg, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply create: %v", err)
	}
	if got.Data["x"] != "1" || got.UID == "" || len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "alice" {
		t.Fatalf("applied object: data %v managed %v", got.Data, got.ManagedFields)
	}
	got, err = cms.Apply(e.ctx, corev1apply.ConfigMap("a", "default").WithData(map[string]string{"x": "1", "y": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil || got.Data["y"] != "2" {
		t.Fatalf("apply update: %v %v", got.Data, err)
	}
	_, err = cms.Apply(e.ctx, corev1apply.ConfigMap("a", "default").WithData(map[string]string{"x": "other"}), metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply: %v", err)
	}
	got, err = cms.Apply(e.ctx, corev1apply.ConfigMap("a", "default").WithData(map[string]string{"x": "other"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil || got.Data["x"] != "other" || got.Data["y"] != "2" {
		t.Fatalf("forced apply: %v %v", got.Data, err)
	}
	if _, err := cms.Patch(e.ctx, "a", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("apply without field manager: %v", err)
	}
}

func TestServerSideApplyJobSet(t *testing.T) {
	e := newTestEnv(t)
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	js := dyn.Resource(jobsetGVR).Namespace("default")
	created, err := js.Apply(e.ctx, "js1", newJobSet("js1"), metav1.ApplyOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatalf("apply jobset: %v", err)
	}
	if created.GetUID() == "" || len(created.GetManagedFields()) != 1 {
		t.Fatalf("jobset: %v", created.Object["metadata"])
	}
	upd := newJobSet("js1")
	upd.SetLabels(map[string]string{"a": "b"})
	got, err := js.Apply(e.ctx, "js1", upd, metav1.ApplyOptions{FieldManager: "kubectl"})
	if err != nil || got.GetLabels()["a"] != "b" {
		t.Fatalf("apply jobset update: %v", err)
	}
}

// TestUpdateWithoutManagedFieldsKeepsThem: a controller's update of an
// object read without managedFields keeps what apply recorded, so the
// applier can change its own fields again; [{}] clears them.
func TestUpdateWithoutManagedFieldsKeepsThem(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Apply(e.ctx, corev1apply.ConfigMap("a", "default").WithLabels(map[string]string{"l": "1"}), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	cur, err := cms.Get(e.ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.ManagedFields = nil
	cur.Data = map[string]string{"from": "controller"}
	got, err := cms.Update(e.ctx, cur, metav1.UpdateOptions{})
	if err != nil || len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "alice" {
		t.Fatalf("after update: managedFields %v, err %v", got.ManagedFields, err)
	}
	got, err = cms.Apply(e.ctx, corev1apply.ConfigMap("a", "default").WithLabels(map[string]string{"l": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil || got.Labels["l"] != "2" {
		t.Fatalf("re-apply by the same manager: %v %v", got.Labels, err)
	}
	got.ManagedFields = []metav1.ManagedFieldsEntry{{}}
	if got, err = cms.Update(e.ctx, got, metav1.UpdateOptions{}); err != nil || len(got.ManagedFields) != 0 {
		t.Fatalf("update with [{}]: managedFields %v, err %v", got.ManagedFields, err)
	}
}
