package podgc

import (
	"context"
	"fmt"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Policies: which terminated pods the collector deletes.
const (
	// PolicyThreshold is upstream's: the oldest terminated pods beyond
	// TerminatedPodThreshold.
	PolicyThreshold = "threshold"
	// PolicyCounted also deletes, as soon as it sees them, the terminated
	// pods their Job has counted and no longer reads (see collectable),
	// keeping the newest such pod of each Job, so that memory follows the
	// live pods rather than the history.
	PolicyCounted = "counted"
)

// countedWorkers: concurrent deletes of counted pods. Each delete waits for
// a durable commit, so the workers bound the deletes per commit: with 4,
// a sim Job of 1,000 pods in flight counted pods faster than they went and
// the counted pods piled up (thousands; the heap grew with them).
const countedWorkers = 32

// podRef names one pod version's object.
type podRef struct {
	namespace, name string
	uid             types.UID
	created         int64 // creationTimestamp (Unix nanoseconds): orders a Job's pods
}

func refOf(p *corev1.Pod) podRef {
	return podRef{namespace: p.Namespace, name: p.Name, uid: p.UID, created: p.CreationTimestamp.UnixNano()}
}

// newer reports whether r was created after o (names break ties).
func (r podRef) newer(o podRef) bool {
	if r.created != o.created {
		return r.created > o.created
	}
	return r.name > o.name
}

// jobOwner returns the UID and name of the batch/v1 Job controlling p.
func jobOwner(p *corev1.Pod) (types.UID, string, bool) {
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
			return ref.UID, ref.Name, true
		}
	}
	return "", "", false
}

// counted is a pod a Job has counted: terminal, owned by a Job, without the
// job-tracking finalizer (removed only once the Job's status holds the
// pod) and not already being deleted.
func counted(p *corev1.Pod) (types.UID, bool) {
	if !isTerminated(p) || p.DeletionTimestamp != nil || slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		return "", false
	}
	uid, _, ok := jobOwner(p)
	return uid, ok
}

// jobReads reports whether job may still read its counted pod p: with
// backoffLimitPerIndex, an unfinished Job derives an index's failure count
// and backoff from the index's last failed pod.
func jobReads(job *batchv1.Job, p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodFailed || job.Spec.BackoffLimitPerIndex == nil {
		return false
	}
	return !jobFinished(job)
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// countedCollector deletes counted pods as the pod informer reports them.
type countedCollector struct {
	c     *Controller
	jobs  batchlisters.JobLister
	queue workqueue.TypedRateLimitingInterface[podRef]

	mu sync.Mutex
	// kept is each Job's newest counted pod, which stays (so that
	// `kubectl logs job/NAME` still finds a pod after the Job ends).
	kept map[types.UID]podRef
}

func newCountedCollector(c *Controller, jobs batchlisters.JobLister) *countedCollector {
	return &countedCollector{
		c: c, jobs: jobs, kept: map[types.UID]podRef{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podRef](),
			workqueue.TypedRateLimitingQueueConfig[podRef]{Name: "pod-gc-counted", Clock: c.clock}),
	}
}

// handlers is the pod informer's event handler.
func (cc *countedCollector) handlers() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { cc.observe(obj) },
		UpdateFunc: func(_, obj any) { cc.observe(obj) },
		DeleteFunc: cc.forget,
	}
}

func (cc *countedCollector) observe(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		if job, ok := counted(p); ok {
			cc.offer(job, refOf(p))
		}
	}
}

// offer queues a counted pod for deletion unless it is its Job's newest,
// in which case the previously kept one is queued instead.
func (cc *countedCollector) offer(job types.UID, r podRef) {
	cc.mu.Lock()
	kept, ok := cc.kept[job]
	switch {
	case ok && kept.uid == r.uid:
		cc.mu.Unlock()
		return
	case !ok || r.newer(kept):
		cc.kept[job] = r
		cc.mu.Unlock()
		if ok {
			cc.queue.Add(kept)
		}
		return
	}
	cc.mu.Unlock()
	cc.queue.Add(r)
}

// forget drops a deleted pod from the kept ones.
func (cc *countedCollector) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	job, _, ok := jobOwner(p)
	if !ok {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.kept[job].uid == p.UID {
		delete(cc.kept, job)
	}
}

// sweepPods offers every counted pod of a pass: the ones whose Job has
// since finished, and any missed.
func (cc *countedCollector) sweepPods(pods []*corev1.Pod) {
	for _, p := range pods {
		cc.observe(p)
	}
}

// run deletes queued pods with countedWorkers workers until ctx ends.
func (cc *countedCollector) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range countedWorkers {
		wg.Go(func() {
			for cc.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	cc.queue.ShutDown()
	wg.Wait()
}

func (cc *countedCollector) next(ctx context.Context) bool {
	r, shutdown := cc.queue.Get()
	if shutdown {
		return false
	}
	defer cc.queue.Done(r)
	if err := cc.collect(ctx, r); err != nil {
		cc.c.log.Info("pod gc: delete counted pod failed", "namespace", r.namespace, "name", r.name, "err", err)
		cc.queue.AddRateLimited(r)
		return true
	}
	cc.queue.Forget(r)
	return true
}

// collect deletes the pod r names if it is still counted and its Job no
// longer reads it.
func (cc *countedCollector) collect(ctx context.Context, r podRef) error {
	p, err := cc.c.pods.Pods(r.namespace).Get(r.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod: %w", err)
	}
	if p.UID != r.uid {
		return nil
	}
	if _, ok := counted(p); !ok {
		return nil
	}
	jobUID, jobName, _ := jobOwner(p)
	job, err := cc.jobs.Jobs(p.Namespace).Get(jobName)
	if apierrors.IsNotFound(err) {
		return nil // the Job is gone: the garbage collector decides (it may orphan the pod)
	}
	if err != nil {
		return fmt.Errorf("get job: %w", err)
	}
	if job.UID != jobUID || jobReads(job, p) {
		return nil // the sweep offers it again once the Job has finished
	}
	return cc.c.deletePod(ctx, p, "counted")
}
