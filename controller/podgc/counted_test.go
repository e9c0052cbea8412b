package podgc

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

func job(name string, perIndex bool, finished bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
	if perIndex {
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	}
	if finished {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

// jobPod is a terminated pod of the Job named owner, counted unless
// tracked (it still holds the job-tracking finalizer).
func jobPod(name, owner string, phase corev1.PodPhase, created int64, tracked bool) *corev1.Pod {
	p := pod(name, "n1", phase, created)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
	if tracked {
		p.Finalizers = []string{batchv1.JobTrackingFinalizer}
	}
	return p
}

func TestCounted(t *testing.T) {
	notController := jobPod("p", "j", corev1.PodSucceeded, 0, false)
	notController.OwnerReferences[0].Controller = nil
	deleting := terminating(jobPod("p", "j", corev1.PodSucceeded, 0, false))
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"succeeded, counted", jobPod("p", "j", corev1.PodSucceeded, 0, false), true},
		{"failed, counted", jobPod("p", "j", corev1.PodFailed, 0, false), true},
		{"still tracked by the Job", jobPod("p", "j", corev1.PodSucceeded, 0, true), false},
		{"running", jobPod("p", "j", corev1.PodRunning, 0, false), false},
		{"no Job owner", pod("p", "n1", corev1.PodSucceeded, 0), false},
		{"Job owner not controller", notController, false},
		{"already being deleted", deleting, false},
	}
	for _, tt := range tests {
		if _, got := counted(tt.pod); got != tt.want {
			t.Errorf("%s: counted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestJobReads(t *testing.T) {
	tests := []struct {
		name string
		job  *batchv1.Job
		pod  *corev1.Pod
		want bool
	}{
		{"failed pod, backoffLimitPerIndex, running Job", job("j", true, false), jobPod("p", "j", corev1.PodFailed, 0, false), true},
		{"failed pod, backoffLimitPerIndex, finished Job", job("j", true, true), jobPod("p", "j", corev1.PodFailed, 0, false), false},
		{"succeeded pod, backoffLimitPerIndex", job("j", true, false), jobPod("p", "j", corev1.PodSucceeded, 0, false), false},
		{"failed pod, no backoffLimitPerIndex", job("j", false, false), jobPod("p", "j", corev1.PodFailed, 0, false), false},
	}
	for _, tt := range tests {
		if got := jobReads(tt.job, tt.pod); got != tt.want {
			t.Errorf("%s: jobReads = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The counted policy deletes the pods their Job counted and no longer
// reads, keeping each Job's newest, and nothing else.
func TestCountedPolicyPass(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		job("a", false, false), job("perindex", true, false),
		jobPod("a-1", "a", corev1.PodSucceeded, 1, false),
		jobPod("a-2", "a", corev1.PodFailed, 2, false),
		jobPod("a-3", "a", corev1.PodSucceeded, 3, false), // a's newest: kept
		jobPod("a-4", "a", corev1.PodSucceeded, 4, true),  // not counted yet
		jobPod("a-5", "a", corev1.PodRunning, 5, false),
		jobPod("perindex-1", "perindex", corev1.PodFailed, 1, false), // read by its Job
		jobPod("perindex-2", "perindex", corev1.PodSucceeded, 2, false),
		jobPod("orphan-1", "gone", corev1.PodSucceeded, 1, false), // Job gone: the GC decides
		jobPod("orphan-2", "gone", corev1.PodSucceeded, 2, false),
		pod("bare", "n1", corev1.PodSucceeded, 0),
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clocktesting.NewFakeClock(t0),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()}, Options{Policy: PolicyCounted})
	if err != nil {
		t.Fatal(err)
	}
	defer c.counted.queue.ShutDown() // as Run does when its context ends
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	drain(ctx, c.counted)
	if got, want := deletedPods(client), []string{"a-1", "a-2"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}

	// Once perindex finishes, it reads its failed pod no longer.
	if _, err := client.BatchV1().Jobs("ns").UpdateStatus(ctx, job("perindex", true, true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		j, err := c.counted.jobs.Jobs("ns").Get("perindex")
		return err == nil && jobFinished(j), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	drain(ctx, c.counted)
	if got, want := deletedPods(client), []string{"a-1", "a-2", "perindex-1"}; !slices.Equal(got, want) {
		t.Errorf("after perindex finished: deleted %v, want %v", got, want)
	}
}

// A newer counted pod of a Job takes the kept place and queues the one
// kept before; an older one is queued at once.
func TestOfferKeepsNewest(t *testing.T) {
	cc := &countedCollector{kept: map[types.UID]podRef{}, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[podRef]())}
	defer cc.queue.ShutDown()
	ref := func(name string, created int64) podRef {
		return podRef{namespace: "ns", name: name, uid: types.UID(name), created: created}
	}
	steps := []struct {
		offer      podRef
		wantKept   string
		wantQueued string
	}{
		{ref("p2", 2), "p2", ""},
		{ref("p1", 1), "p2", "p1"},
		{ref("p2", 2), "p2", ""},
		{ref("p3", 3), "p3", "p2"},
	}
	for i, s := range steps {
		cc.offer("job", s.offer)
		if got := cc.kept["job"].name; got != s.wantKept {
			t.Errorf("step %d: kept %s, want %s", i, got, s.wantKept)
		}
		queued := ""
		if cc.queue.Len() > 0 {
			r, _ := cc.queue.Get()
			cc.queue.Done(r)
			queued = r.name
		}
		if queued != s.wantQueued {
			t.Errorf("step %d: queued %q, want %q", i, queued, s.wantQueued)
		}
	}
}

// drain runs the collector's queue until it is empty.
func drain(ctx context.Context, cc *countedCollector) {
	for cc.queue.Len() > 0 {
		cc.next(ctx)
	}
}

func deletedPods(client *fake.Clientset) []string {
	var names []string
	for _, a := range client.Actions() {
		if d, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			names = append(names, d.GetName())
		}
	}
	slices.Sort(names)
	return names
}
