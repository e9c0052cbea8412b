package job

import (
	"context"
	"fmt"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// syncJob reconciles one Job: read from the listers, decide, apply.
func (c *Controller) syncJob(ctx context.Context, key string) (rErr error) {
	start := c.clock.Now()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || ns == "" || name == "" {
		return fmt.Errorf("invalid job key %q", key)
	}
	shared, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.podExpect.delete(key)
		c.finalizerExp.delete(key)
		c.backoff.remove(key)
		c.ownWrites.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if c.ownWrites.Behind(key, shared.ResourceVersion) {
		// Pods may already show what this Job's cached status does not:
		// their finalizers gone, their counts not. The update's own event
		// queues the Job again.
		c.log.Debug("job cache behind its status update, waiting for the update event", "namespace", ns, "job", name)
		return nil
	}
	if ctrl, external := c.managedByExternal(shared); external {
		c.log.Debug("skipping job managed by another controller", "job", key, "managedBy", ctrl)
		return nil
	}
	job := shared.DeepCopy()
	if IsJobFinished(job) {
		c.backoff.remove(key)
		c.forgetFinished(job)
		return nil
	}
	if c.finishedPending(job) {
		return nil
	}
	if m := job.Spec.CompletionMode; m != nil && *m != batch.NonIndexedCompletion && *m != batch.IndexedCompletion {
		c.recorder.Event(job, v1.EventTypeWarning, eventUnknownCompletion, msgUnknownCompletionMode)
		return nil
	}
	st := &syncState{action: actionReconciling}
	defer func() { c.recordSync(job, st.action, start, rErr) }()

	// Expectations are read before the pods are listed: the informer
	// updates its store before its handler lowers them, so a pod whose
	// finalizer release is no longer expected is listed without it.
	satisfied := c.podExpect.satisfied(key)
	expectedRm := c.finalizerExp.expected(key)
	pods, err := c.getPodsForJob(ctx, job)
	if err != nil {
		return err
	}
	oldStatus := job.Status.DeepCopy()
	*st = *decide(syncInput{
		job: job, pods: pods, satisfiedExpectations: satisfied,
		expectedRmFinalizers: expectedRm,
		backoff:              c.backoff.get(key), now: c.clock.Now(), tun: c.tun,
	})
	res, opsErr := c.applyPodOps(ctx, key, st)
	st.afterPodOps(res)
	if st.requeueAfter > 0 {
		c.queue.AddAfter(key, st.requeueAfter)
	}
	if err := c.trackAndFlush(ctx, key, st, oldStatus); err != nil {
		return fmt.Errorf("tracking status: %w", err)
	}
	return opsErr
}

func (c *Controller) recordSync(job *batch.Job, action string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	mode := completionModeOf(job)
	c.metrics.syncDuration.WithLabelValues(mode, result, action).Observe(c.clock.Since(start).Seconds())
	c.metrics.syncs.WithLabelValues(mode, result, action).Inc()
}

func (c *Controller) finishedPending(job *batch.Job) bool {
	c.finishedJobsMu.Lock()
	defer c.finishedJobsMu.Unlock()
	return c.finishedJobs[job.UID]
}

func (c *Controller) markFinished(job *batch.Job) {
	c.finishedJobsMu.Lock()
	defer c.finishedJobsMu.Unlock()
	c.finishedJobs[job.UID] = true
}
