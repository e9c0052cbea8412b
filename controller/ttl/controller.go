package ttl

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	batch "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/controller/metricsreg"
)

// Options configure the TTL controller.
type Options struct {
	// Propagation of the Job deletion; Background by default. (Upstream's
	// ttl-after-finished-controller uses Foreground.)
	Propagation metav1.DeletionPropagation
}

var _ controllerctx.Controller = (*Controller)(nil)

// Controller deletes finished Jobs after their TTL.
type Controller struct {
	client      kubernetes.Interface
	lister      batchlisters.JobLister
	synced      cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	clock       clock.WithTicker
	log         *slog.Logger
	propagation metav1.DeletionPropagation
	deletion    prometheus.Histogram
}

// New builds the TTL controller over cc's Job informer.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	if opts.Propagation == "" {
		opts.Propagation = metav1.DeletePropagationBackground
	}
	jobInformer := cc.Informers.Batch().V1().Jobs()
	c := &Controller{
		client: cc.Client, lister: jobInformer.Lister(), synced: jobInformer.Informer().HasSynced,
		clock: cc.Clock, log: cc.Logger, propagation: opts.Propagation,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ttl_jobs_to_delete", Clock: cc.Clock}),
		deletion: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "ttl_after_finished_controller", Name: "job_deletion_duration_seconds",
			Help:    "The time it took to delete the job since it became eligible for deletion",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 14),
		}),
	}
	if err := metricsreg.Register(cc.Registerer, "ttl", c.deletion); err != nil {
		return nil, err
	}
	_, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	return c, err
}

func (c *Controller) enqueue(obj any) {
	job, ok := obj.(*batch.Job)
	if !ok || !needsCleanup(job) {
		return
	}
	c.queue.Add(job.Namespace + "/" + job.Name)
}

// Run processes the queue with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSync("TTL after finished", ctx.Done(), c.synced) {
		return fmt.Errorf("ttl controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.log.Info("ttl cleanup failed, requeueing", "job", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync deletes the Job if its TTL expired, else requeues it for the rest.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	job, err := c.lister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := c.expired(key, job); err != nil || !expired {
		return err
	}
	// The TTL may have changed since the cache saw the Job: check the fresh copy.
	fresh, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if expired, err := c.expired(key, fresh); err != nil || !expired {
		return err
	}
	return c.delete(ctx, fresh)
}

// expired reports whether the Job's TTL has run out, scheduling a later
// look when it has not.
func (c *Controller) expired(key string, job *batch.Job) (bool, error) {
	if !needsCleanup(job) {
		return false, nil
	}
	left, expireAt, err := timeLeft(job, c.clock.Now())
	if err != nil {
		return false, err
	}
	if left > 0 {
		if at, _ := finishTime(job); at.After(c.clock.Now()) {
			c.log.Info("job finish time is in the future, clock skew suspected", "job", key)
		}
		c.queue.AddAfter(key, left)
		return false, nil
	}
	c.deletion.Observe(c.clock.Since(expireAt).Seconds())
	return true, nil
}

func (c *Controller) delete(ctx context.Context, job *batch.Job) error {
	policy := c.propagation
	err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &job.UID, ResourceVersion: &job.ResourceVersion},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or changed: the update event brings it back
	}
	if err != nil {
		return fmt.Errorf("delete job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.log.Info("deleted finished job after its TTL", "namespace", job.Namespace, "name", job.Name)
	return nil
}
