package job

import (
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// A pod the cache still shows but the API no longer has (NotFound on the
// finalizer patch or the delete) will never produce a deletion the informer
// observes after the expectation was set: like upstream's deleteJobPods, the
// expectation is lowered at once, so the next sync is not blocked until the
// expectations timeout.
func TestSuspendDeleteOfVanishedPodLowersExpectations(t *testing.T) {
	job := newTestJob("vanished", 1, 1)
	job.UID = "job-uid-vanished"
	job.Spec.Suspend = ptr.To(true)
	client := fake.NewClientset(job) // the pod is not in the API
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := New(controllerctx.Context{Client: client, Informers: factory,
		Clock: clocktesting.NewFakeClock(testEpoch), Recorder: record.NewFakeRecorder(100)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "vanished-abcde", Namespace: "default", UID: types.UID("pod-uid-1"),
			Labels:          job.Spec.Template.Labels,
			Finalizers:      []string{batch.JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	if err := factory.Batch().V1().Jobs().Informer().GetIndexer().Add(job); err != nil {
		t.Fatal(err)
	}
	if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	key := "default/vanished"
	if err := ctrl.SyncJob(t.Context(), key); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !ctrl.podExpect.satisfied(key) {
		t.Errorf("expectations still pending after deleting a pod that was already gone")
	}
}
