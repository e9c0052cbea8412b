package job

import (
	"context"
	"slices"
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// The release step sends upstream's patch, one per pod: a strategic merge
// `$deleteFromPrimitiveList/finalizers` naming only the tracking finalizer
// (BenchmarkRemoveTrackingFinalizer in apiserver shows it is also the
// cheapest for the server). It keeps every other finalizer, wherever the
// tracking one sits, and a pod already gone counts as released.
func TestRemoveFinalizersSendsUpstreamPatch(t *testing.T) {
	const other = "example.com/keep"
	tracking := batch.JobTrackingFinalizer
	for _, tc := range []struct {
		name       string
		finalizers []string // nil: the pod does not exist
		want       []string
	}{
		{"only tracking", []string{tracking}, nil},
		{"tracking last", []string{other, tracking}, []string{other}},
		{"tracking first", []string{tracking, other}, []string{other}},
		{"pod gone", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", Finalizers: tc.finalizers}}
			client := fake.NewClientset()
			if tc.finalizers != nil {
				client = fake.NewClientset(pod.DeepCopy())
			}
			c := newPatchTestController(t, client)
			defer c.calls.stop()

			removed, err := c.removeFinalizers(context.Background(), "ns/j", []*v1.Pod{pod})
			if err != nil {
				t.Fatalf("removeFinalizers: %v", err)
			}
			if !removed.Has(pod.UID) {
				t.Errorf("released = %v, want the pod's UID", removed.UnsortedList())
			}
			var patches []k8stesting.PatchAction
			for _, a := range client.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok {
					patches = append(patches, p)
				}
			}
			if len(patches) != 1 {
				t.Fatalf("patches sent = %d, want 1", len(patches))
			}
			wantBody := `{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + tracking + `"]}}`
			if p := patches[0]; p.GetPatchType() != types.StrategicMergePatchType || string(p.GetPatch()) != wantBody || p.GetName() != "p" {
				t.Errorf("patch = %s %s %s, want %s %s", p.GetPatchType(), p.GetName(), p.GetPatch(), types.StrategicMergePatchType, wantBody)
			}
			if tc.finalizers == nil {
				return
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.want) {
				t.Errorf("finalizers = %v, want %v", got.Finalizers, tc.want)
			}
		})
	}
}

func newPatchTestController(t *testing.T, client *fake.Clientset) *Controller {
	t.Helper()
	c, err := New(controllerctx.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0),
		Clock: clocktesting.NewFakeClock(testEpoch), Recorder: record.NewFakeRecorder(10)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
