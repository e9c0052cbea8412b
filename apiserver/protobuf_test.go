package apiserver

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A typed client speaking protobuf, as kube-controller-manager's do, gets
// protobuf answers for built-in kinds and JSON errors it can still read.
func TestProtobufClient(t *testing.T) {
	env := newTestEnv(t)
	cfg := rest.CopyConfig(env.cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + ",application/json"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := client.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := pods.Create(env.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("created pod lacks server fields: uid %q rv %q restartPolicy %q", created.UID, created.ResourceVersion, created.Spec.RestartPolicy)
	}
	patched, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("patch status: %v", err)
	}
	if patched.Status.Phase != corev1.PodRunning || patched.ResourceVersion == created.ResourceVersion {
		t.Fatalf("patched: phase %q rv %q (was %q)", patched.Status.Phase, patched.ResourceVersion, created.ResourceVersion)
	}
	got, err := pods.Get(env.ctx, "p", metav1.GetOptions{})
	if err != nil || got.Labels["a"] != "b" || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("get: %v %+v", err, got)
	}
	if _, err := pods.Get(env.ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: want NotFound, got %v", err)
	}
	list, err := pods.List(env.ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
	req, _ := http.NewRequest(http.MethodGet, env.http.URL+"/api/v1/namespaces/default/pods/p", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", cfg.AcceptContentTypes)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != runtime.ContentTypeProtobuf {
		t.Fatalf("Content-Type = %q, want protobuf", ct)
	}
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}
	if _, err := pods.Create(env.ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("create invalid: want 422, got %v", err)
	}
}
