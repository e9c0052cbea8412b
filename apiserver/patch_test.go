package apiserver

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

func TestPatchTypes(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	pod := testPod("p", "")
	pod.Spec.Containers = append(pod.Spec.Containers, pod.Spec.Containers[0])
	pod.Spec.Containers[1].Name = "side"
	if _, err := pods.Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Strategic merge: containers merge by name.
	gotPod, err := pods.Patch(e.ctx, "p", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"side","image":"changed"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("SMP: %v", err)
	}
	if c := gotPod.Spec.Containers; len(c) != 2 || c[0].Image != "busybox" || c[1].Image != "changed" {
		t.Fatalf("SMP containers = %+v", c)
	}
	jobs := e.client.BatchV1().Jobs("default")
	if _, err := jobs.Create(e.ctx, testJob("pi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := jobs.Patch(e.ctx, "pi", types.StrategicMergePatchType, []byte(`{"spec":{"backoffLimit":2}}`), metav1.PatchOptions{})
	if err != nil || got.Generation != 2 || *got.Spec.BackoffLimit != 2 {
		t.Fatalf("SMP job: %v generation %d", err, got.Generation)
	}
	// Merge patch replaces lists.
	got, err = jobs.Patch(e.ctx, "pi", types.MergePatchType, []byte(`{"metadata":{"labels":{"m":"1"}}}`), metav1.PatchOptions{})
	if err != nil || got.Labels["m"] != "1" || got.Generation != 2 {
		t.Fatalf("merge patch: %v %v gen %d", got.Labels, err, got.Generation)
	}
	// JSON patch.
	got, err = jobs.Patch(e.ctx, "pi", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/backoffLimit","value":1}]`), metav1.PatchOptions{})
	if err != nil || *got.Spec.BackoffLimit != 1 {
		t.Fatalf("json patch: %v", err)
	}
	// Status patch touches only status.
	got, err = jobs.Patch(e.ctx, "pi", types.MergePatchType, []byte(`{"spec":{"backoffLimit":5},"status":{"active":1}}`), metav1.PatchOptions{}, "status")
	if err != nil || got.Status.Active != 1 || *got.Spec.BackoffLimit != 1 {
		t.Fatalf("status patch: %v %+v", err, got.Status)
	}
	// A failing JSON patch test op is rejected and changes nothing.
	_, err = jobs.Patch(e.ctx, "pi", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/backoffLimit","value":9}]`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) && apierrors.ReasonForError(err) != metav1.StatusReasonInvalid && apierrors.APIStatus(nil) == nil {
		t.Logf("test op error: %v", err)
	}
	if err == nil {
		t.Fatal("failing test op accepted")
	}
	// Malformed patch bodies are 400.
	_, err = jobs.Patch(e.ctx, "pi", types.MergePatchType, []byte(`{not json`), metav1.PatchOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("malformed patch: %v", err)
	}
	// Stale resourceVersion in a patch is a conflict.
	_, err = jobs.Patch(e.ctx, "pi", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale patch: %v", err)
	}
}

var jobsetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

func newJobSet(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]interface{}{"name": name, "namespace": "default"},
		"spec": map[string]interface{}{"replicatedJobs": []interface{}{map[string]interface{}{
			"name": "workers", "replicas": int64(1),
			"template": map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
				"containers": []interface{}{map[string]interface{}{"name": "c", "image": "x"}}}}}},
		}}},
	}}
}

func TestJobSetPatchAndCRUD(t *testing.T) {
	e := newTestEnv(t)
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	js := dyn.Resource(jobsetGVR).Namespace("default")
	created, err := js.Create(e.ctx, newJobSet("js1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create jobset: %v", err)
	}
	if created.GetGeneration() != 1 || created.GetUID() == "" {
		t.Fatalf("jobset metadata: %v", created.Object["metadata"])
	}
	_, err = js.Patch(e.ctx, "js1", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if apierrors.ReasonForError(err) != metav1.StatusReasonUnsupportedMediaType {
		t.Fatalf("SMP on jobset: %v, want 415", err)
	}
	got, err := js.Patch(e.ctx, "js1", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil || got.GetLabels()["a"] != "b" {
		t.Fatalf("merge patch jobset: %v", err)
	}
	got, err = js.Patch(e.ctx, "js1", types.MergePatchType, []byte(`{"status":{"restarts":2}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("status patch jobset: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "status", "restarts"); r != 2 {
		t.Fatalf("restarts = %d", r)
	}
	list, err := js.List(e.ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list jobsets: %v", err)
	}
	if err := js.Delete(e.ctx, "js1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Get(e.ctx, "js1", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `jobsets.jobset.x-k8s.io "js1" not found` {
		t.Fatalf("get deleted jobset: %v", err)
	}
}

func TestJobSetSchemaDefaults(t *testing.T) {
	e := newTestEnv(t)
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	js := newJobSet("js2")
	rjobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	delete(rjobs[0].(map[string]interface{}), "replicas")
	_ = unstructured.SetNestedSlice(js.Object, rjobs, "spec", "replicatedJobs")
	got, err := dyn.Resource(jobsetGVR).Namespace("default").Create(e.ctx, js, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rjobs, _, _ = unstructured.NestedSlice(got.Object, "spec", "replicatedJobs")
	rj := rjobs[0].(map[string]interface{})
	if rj["replicas"] != int64(1) || rj["groupName"] != "default" {
		t.Fatalf("replicatedJob defaults: replicas %v groupName %v", rj["replicas"], rj["groupName"])
	}
}

// A status patch reads the shared decoded copy of the current pod without
// a private copy: the merge, the status strategy and validation must leave
// that copy as it was, and the patch must still land.
func TestStatusPatchLeavesSharedCopy(t *testing.T) {
	env := newTestEnv(t)
	pods := env.client.CoreV1().Pods("default")
	pod := testPod("p", "n1")
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	created, err := pods.Create(env.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := registry.Pods()
	shared, _, err := env.srv.objects.GetShared(env.ctx, res, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	before := shared.DeepCopyObject()
	patch := `{"metadata":{"uid":"` + string(created.UID) + `"},"status":{"phase":"Running","podIP":"10.1.0.1","conditions":[{"type":"Ready","status":"True","reason":null}],` +
		`"containerStatuses":[{"name":"main","ready":true,"restartCount":0,"image":"busybox","imageID":"","state":{"running":{"startedAt":"2026-01-02T03:04:05Z"}}}]}}`
	out, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Phase != corev1.PodRunning || out.Status.PodIP != "10.1.0.1" || len(out.Status.ContainerStatuses) != 1 ||
		len(out.Status.Conditions) != 1 || out.Status.Conditions[0].Type != corev1.PodReady {
		t.Fatalf("status not patched: %+v", out.Status)
	}
	if !equality.Semantic.DeepEqual(shared, before) {
		t.Fatal("the status patch changed the shared copy of the current pod")
	}
	if out.Spec.Containers[0].Image != "busybox" || out.Finalizers[0] != "batch.kubernetes.io/job-tracking" {
		t.Fatalf("unpatched parts lost: %+v", out)
	}
}
