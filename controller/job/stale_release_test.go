package job

import (
	"context"
	"sync"
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// staleListing hands out one pod listing taken just before the informer
// applies a pod update: after the first ByIndex it runs apply, which plays
// the informer (store updated, then the handler).
type staleListing struct {
	cache.Indexer
	once  sync.Once
	apply func()
}

func (s *staleListing) ByIndex(index, key string) ([]any, error) {
	objs, err := s.Indexer.ByIndex(index, key)
	s.once.Do(s.apply)
	return objs, err
}

// A pod whose finalizer the previous sync released and counted may still
// be listed with it when the informer shows the release right after the
// listing. Its release is then still expected, so the sync neither sends
// the patch again nor counts the pod twice (NonIndexed Jobs count UIDs).
func TestReleasedPodListedStaleIsNotCountedAgain(t *testing.T) {
	for _, mode := range []batch.CompletionMode{batch.NonIndexedCompletion, batch.IndexedCompletion} {
		t.Run(string(mode), func(t *testing.T) {
			job := newTestJob("j", 3, 1)
			job.UID = "job-uid-j"
			job.ResourceVersion = "5"
			job.Spec.CompletionMode = ptr.To(mode)
			job.Status.StartTime = ptr.To(metav1.NewTime(testEpoch))
			job.Status.Succeeded = 1 // the released pod, counted
			job.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{}
			if mode == batch.IndexedCompletion {
				job.Status.CompletedIndexes = "0"
			}
			released := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: "j-0", Namespace: job.Namespace, UID: "pod-0", ResourceVersion: "3",
					Labels:          job.Spec.Template.Labels,
					Annotations:     map[string]string{batch.JobCompletionIndexAnnotation: "0"},
					OwnerReferences: []metav1.OwnerReference{*newControllerRef(job)},
					Finalizers:      []string{batch.JobTrackingFinalizer},
				},
				Status: v1.PodStatus{Phase: v1.PodSucceeded},
			}
			client := fake.NewClientset(job.DeepCopy(), released.DeepCopy())
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(controllerctx.Context{Client: client, Informers: factory,
				Clock: clocktesting.NewFakeClock(testEpoch), Recorder: record.NewFakeRecorder(100)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.calls.stop()
			if err := factory.Batch().V1().Jobs().Informer().GetIndexer().Add(job); err != nil {
				t.Fatal(err)
			}
			store := factory.Core().V1().Pods().Informer().GetIndexer()
			if err := store.Add(released); err != nil {
				t.Fatal(err)
			}
			key := jobKey(job)
			c.finalizerExp.expectRemoved(key, []types.UID{released.UID})
			c.podIndexer = &staleListing{Indexer: store, apply: func() {
				shown := released.DeepCopy()
				shown.Finalizers, shown.ResourceVersion = nil, "4"
				if err := store.Update(shown); err != nil {
					t.Error(err)
				}
				c.finalizerExp.observed(key, released.UID)
			}}

			if err := c.syncJob(context.Background(), key); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			for _, a := range client.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok && p.GetResource().Resource == "pods" {
					t.Errorf("patched pod %s again: %s", p.GetName(), p.GetPatch())
				}
				if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
					st := u.GetObject().(*batch.Job).Status
					if st.Succeeded != 1 || len(st.UncountedTerminatedPods.Succeeded) != 0 {
						t.Errorf("status written: succeeded=%d uncounted=%v, want 1 and none", st.Succeeded, st.UncountedTerminatedPods.Succeeded)
					}
				}
			}
		})
	}
}
