package apiserver

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The server compares pod specs once for the generation and validation:
// a forbidden spec change through a patch is still refused with upstream's
// message, an allowed one lands, and a metadata-only patch leaves the
// generation.
func TestPodSpecPatchValidatedOnce(t *testing.T) {
	env := newTestEnv(t)
	pods := env.client.CoreV1().Pods("default")
	created, err := pods.Create(env.ctx, testPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"hostname":"h"}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec: Forbidden: pod updates may not change fields other than") {
		t.Fatalf("forbidden spec change: %v", err)
	}
	out, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"main","image":"other"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Containers[0].Image != "other" || out.Generation != created.Generation+1 {
		t.Fatalf("image %q generation %d (was %d)", out.Spec.Containers[0].Image, out.Generation, created.Generation)
	}
	out2, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Generation != out.Generation || out2.Labels["x"] != "y" {
		t.Fatalf("metadata patch: generation %d (was %d), labels %v", out2.Generation, out.Generation, out2.Labels)
	}
}
