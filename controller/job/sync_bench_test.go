package job

import (
	"context"
	"fmt"
	"strconv"
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

// benchSyncFixture is an Indexed Job deep into its run: counted pods
// (Succeeded, finalizer removed, in completedIndexes), a window of freshly
// succeeded pods still holding the finalizer, and parallelism running pods.
type benchSyncFixture struct {
	ctrl *Controller
	job  *batch.Job
}

func newBenchSyncFixture(b testing.TB, counted, fresh, running int) *benchSyncFixture {
	return newBenchSyncFixtureStride(b, counted, 1, fresh, running)
}

// newBenchSyncFixtureStride places the counted pods stride indexes apart:
// with stride 2, completedIndexes is counted single indexes ("0,2,4,...").
func newBenchSyncFixtureStride(b testing.TB, counted, stride, fresh, running int) *benchSyncFixture {
	b.Helper()
	first := counted * stride // the first index after the counted ones
	completions := int32(first + fresh + running + 1000)
	j := newTestJob("bench", completions, int32(running))
	j.UID = "job-uid-bench"
	j.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
	j.Status.StartTime = ptr.To(metav1.NewTime(testEpoch))
	j.Status.Succeeded = int32(counted)
	var done indexSet
	for i := range counted {
		done = append(done, span{i * stride, i * stride})
	}
	j.Status.CompletedIndexes = done.union(nil).String()
	j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	podInf, jobInf := factory.Core().V1().Pods(), factory.Batch().V1().Jobs()
	ctrl, err := New(controllerctx.Context{Client: fake.NewClientset(), Informers: factory,
		Clock: clocktesting.NewFakeClock(testEpoch), Recorder: record.NewFakeRecorder(10)}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := jobInf.Informer().GetIndexer().Add(j); err != nil {
		b.Fatal(err)
	}
	idx := podInf.Informer().GetIndexer()
	add := func(ix int, phase v1.PodPhase, finalizer bool) {
		p := benchPod(j, ix, phase, finalizer)
		if err := idx.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	// Interleave the groups so the index sort has real work to do.
	for i := range counted {
		add((counted-1-i)*stride, v1.PodSucceeded, false)
	}
	for i := range fresh {
		add(first+i, v1.PodSucceeded, true)
	}
	for i := range running {
		add(first+fresh+i, v1.PodRunning, true)
	}
	return &benchSyncFixture{ctrl: ctrl, job: j}
}

func benchPod(j *batch.Job, ix int, phase v1.PodPhase, finalizer bool) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("bench-%d-x", ix), Namespace: j.Namespace,
			UID:             types.UID(fmt.Sprintf("pod-%d", ix)),
			Labels:          j.Spec.Template.Labels,
			Annotations:     map[string]string{batch.JobCompletionIndexAnnotation: strconv.Itoa(ix)},
			OwnerReferences: []metav1.OwnerReference{*newControllerRef(j)},
		},
		Status: v1.PodStatus{Phase: phase},
	}
	if finalizer {
		p.Finalizers = []string{batch.JobTrackingFinalizer}
	}
	return p
}

// syncPure runs every per-pod step of a sync (pod listing, decide, the
// finalizer tracking plan) without the API writes.
func (f *benchSyncFixture) syncPure(ctx context.Context) (*syncState, *trackPlan, error) {
	job := f.job.DeepCopy()
	pods, err := f.ctrl.getPodsForJob(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	st := decide(syncInput{job: job, pods: pods, satisfiedExpectations: true, now: testEpoch, tun: f.ctrl.tun})
	st.afterPodOps(podOpsResult{})
	return st, st.track(), nil
}

// BenchmarkSyncIndexedJobCountedPods is one sync of an Indexed Job with
// many counted pods, 500 newly succeeded ones and 1,000 running. cpu-ms/op
// is the process's CPU per sync (GC included), the figure to compare on a
// loaded machine.
func BenchmarkSyncIndexedJobCountedPods(b *testing.B) {
	for _, counted := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("counted=%d", counted), func(b *testing.B) {
			benchSync(b, newBenchSyncFixture(b, counted, 500, 1000), 500, counted+500)
		})
	}
}

// BenchmarkSyncIndexedJobActive is the sync a single pod event causes in
// the middle of a large Job: 1,000 active pods, a few newly succeeded,
// and completedIndexes either one interval or, with the counted indexes
// two apart, 10,000 intervals.
func BenchmarkSyncIndexedJobActive(b *testing.B) {
	for _, stride := range []int{1, 2} {
		b.Run(fmt.Sprintf("intervals=%d", map[int]int{1: 1, 2: 10_000}[stride]), func(b *testing.B) {
			benchSync(b, newBenchSyncFixtureStride(b, 10_000, stride, 5, 1000), 5, 10_005)
		})
	}
}

func benchSync(b *testing.B, f *benchSyncFixture, wantRemove, wantSucceeded int) {
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		st, tp, err := f.syncPure(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if len(tp.removeFinalizers) != wantRemove || st.job.Status.Succeeded != int32(wantSucceeded) {
			b.Fatalf("removeFinalizers=%d succeeded=%d", len(tp.removeFinalizers), st.job.Status.Succeeded)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// TestBenchSyncFixture checks the benchmark's fixture decides what a real
// sync would: 500 finalizers to drop, their indexes counted, no creations
// beyond the parallelism already running.
func TestBenchSyncFixture(t *testing.T) {
	f := newBenchSyncFixture(t, 2000, 500, 1000)
	st, tp, err := f.syncPure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.removeFinalizers) != 500 || len(st.creates) != 0 || st.job.Status.CompletedIndexes != "0-2499" || st.job.Status.Active != 1000 {
		t.Fatalf("removeFinalizers=%d creates=%d completed=%q active=%d",
			len(tp.removeFinalizers), len(st.creates), st.job.Status.CompletedIndexes, st.job.Status.Active)
	}
	for i, p := range tp.removeFinalizers {
		if podIndex(p) != 2000+i {
			t.Fatalf("removeFinalizers[%d] has index %d, want %d (index order)", i, podIndex(p), 2000+i)
		}
	}
}
