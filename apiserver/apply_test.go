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
