package apiserver

import (
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/inprocclient"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A finalizer patch of a pod that binding assigned to a node name it does
// not check fails on that name, as kube-apiserver's ValidatePodUpdate
// fails it, over HTTP and in process (the patch shares the stored spec, so
// the update takes the stored-spec validation); on a valid node it passes.
func TestFinalizerPatchOfStoredSpec(t *testing.T) {
	e := newTestEnv(t)
	clients := map[string]kubernetes.Interface{"http": e.client, "inprocess": inprocclient.New(e.client, e.srv.InProcessCalls())}
	patch := []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batchv1.JobTrackingFinalizer + `"]}}`)
	for name, client := range clients {
		for _, node := range []string{"node-1", "Bad_Node"} {
			pods := client.CoreV1().Pods("default")
			p := testPod(name+"-"+strings.ToLower(strings.ReplaceAll(node, "_", "-")), "")
			p.Finalizers = []string{batchv1.JobTrackingFinalizer}
			if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
			if err := pods.Bind(e.ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: bind to %s: %v", name, node, err)
			}
			_, err := pods.Patch(e.ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			if node == "node-1" {
				if err != nil {
					t.Errorf("%s: patch of a pod on %s: %v", name, node, err)
				}
				continue
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.nodeName: Invalid value: "Bad_Node"`) {
				t.Errorf("%s: patch of a pod on %s: %v, want spec.nodeName invalid", name, node, err)
			}
		}
	}
}
