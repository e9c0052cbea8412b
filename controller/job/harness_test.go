package job

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// harness runs the real controller against a fake clientset; the test plays
// the kubelet by moving pods to a terminal phase.
type harness struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	ctrl     *Controller
	factory  informers.SharedInformerFactory
	counter  atomic.Int64
	rv       atomic.Int64
	mu       sync.Mutex
	events   []string
}

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newHarness runs a controller over a fake clientset; opts, when given,
// configure it (at most one).
func newHarness(t *testing.T, opts ...Options) *harness {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, client: fake.NewClientset(), clock: clocktesting.NewFakeClock(testEpoch)}
	h.client.PrependReactor("create", "pods", h.fillPodName)
	h.client.PrependReactor("create", "*", h.bumpResourceVersion)
	h.client.PrependReactor("update", "*", h.bumpResourceVersion)
	h.recorder = record.NewFakeRecorder(1000)
	h.factory = informers.NewSharedInformerFactory(h.client, 0)
	ctrl, err := New(controllerctx.Context{Client: h.client, Informers: h.factory, Clock: h.clock, Recorder: h.recorder}, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ctrl = ctrl
	h.factory.Start(ctx.Done())
	go func() { _ = ctrl.Run(ctx, 2) }()
	return h
}

// bumpResourceVersion gives each created or updated object a new
// resourceVersion, as the API server does: the fake tracker leaves the
// object's own untouched, and the controller's pod handler takes an update
// with an unchanged resourceVersion for a resync and ignores it (a pod's
// failure then went unnoticed until some other event synced its Job).
func (h *harness) bumpResourceVersion(action k8stesting.Action) (bool, runtime.Object, error) {
	// Create and update actions both carry the object (UpdateAction is a
	// CreateAction by its methods).
	a, ok := action.(k8stesting.CreateAction)
	if !ok {
		return false, nil, nil
	}
	if m, err := meta.Accessor(a.GetObject()); err == nil {
		m.SetResourceVersion(strconv.FormatInt(h.rv.Add(1), 10))
	}
	return false, nil, nil
}

// fillPodName emulates the API server's generateName and UID assignment.
func (h *harness) fillPodName(action k8stesting.Action) (bool, runtime.Object, error) {
	pod := action.(k8stesting.CreateAction).GetObject().(*v1.Pod)
	n := h.counter.Add(1)
	if pod.Name == "" {
		pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n)
	}
	pod.UID = types.UID(fmt.Sprintf("pod-uid-%d", n))
	pod.CreationTimestamp = metav1.NewTime(h.clock.Now())
	return false, nil, nil
}

func (h *harness) createJob(job *batch.Job) *batch.Job {
	h.t.Helper()
	job.UID = types.UID("job-uid-" + job.Name)
	created, err := h.client.BatchV1().Jobs(job.Namespace).Create(h.ctx, job, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create job: %v", err)
	}
	return created
}

func (h *harness) getJob(job *batch.Job) *batch.Job {
	h.t.Helper()
	j, err := h.client.BatchV1().Jobs(job.Namespace).Get(h.ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get job: %v", err)
	}
	return j
}

func (h *harness) pods(ns string) []v1.Pod {
	list, err := h.client.CoreV1().Pods(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// eventually polls cond, stepping the fake clock a little each round so
// batched and backoff requeues fire. It bounds the number of rounds, not time.
func (h *harness) eventually(what string, step time.Duration, cond func() bool) {
	h.t.Helper()
	for range 4000 {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
		h.clock.Step(step)
	}
	h.t.Fatalf("never reached: %s", what)
}

// finishPods moves every non-terminal pod to the phase outcome returns
// (empty: leave it running).
func (h *harness) finishPods(ns string, outcome func(*v1.Pod) (v1.PodPhase, int32)) int {
	h.t.Helper()
	n := 0
	for _, p := range h.pods(ns) {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		phase, code := outcome(&p)
		if phase == "" {
			continue
		}
		p.Status.Phase = phase
		now := metav1.NewTime(h.clock.Now())
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main", State: v1.ContainerState{
			Terminated: &v1.ContainerStateTerminated{ExitCode: code, FinishedAt: now}}}}
		if _, err := h.client.CoreV1().Pods(ns).UpdateStatus(h.ctx, &p, metav1.UpdateOptions{}); err != nil {
			h.t.Fatalf("update pod status: %v", err)
		}
		n++
	}
	return n
}

// drainEvents returns the events recorded so far, in order.
func (h *harness) drainEvents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		select {
		case e := <-h.recorder.Events:
			h.events = append(h.events, e)
		default:
			return append([]string(nil), h.events...)
		}
	}
}

func condTypes(job *batch.Job) []string {
	var out []string
	for _, c := range job.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return out
}

func newTestJob(name string, completions, parallelism int32) *batch.Job {
	lbls := map[string]string{"batch.kubernetes.io/job-name": name, "batch.kubernetes.io/controller-uid": "job-uid-" + name}
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batch.JobSpec{
			Completions:          ptr.To(completions),
			Parallelism:          ptr.To(parallelism),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batch.NonIndexedCompletion),
			PodReplacementPolicy: ptr.To(batch.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "job-uid-" + name}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: v1.PodSpec{
					RestartPolicy: v1.RestartPolicyNever,
					Containers:    []v1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}
}

func jobFinished(h *harness, job *batch.Job) func() bool {
	return func() bool { return IsJobFinished(h.getJob(job)) }
}

var _ = labels.Everything
