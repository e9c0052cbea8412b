package job

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// applyPodOps executes the planned deletions or creations and reports what
// actually happened.
func (c *Controller) applyPodOps(ctx context.Context, key string, st *syncState) (podOpsResult, error) {
	switch {
	case len(st.deleteActive) > 0:
		return c.deletePods(ctx, st.job, st.deleteActive, false, "")
	case len(st.deleteJobPods) > 0:
		c.podExpect.expect(key, 0, len(st.deleteJobPods))
		return c.deletePods(ctx, st.job, st.deleteJobPods, true, key)
	case len(st.creates) > 0:
		return c.createPods(ctx, key, st)
	}
	return podOpsResult{}, nil
}

// deletePods deletes pods in parallel. With dropFinalizer the tracking
// finalizer is removed first, so the pod is never counted (suspend, scale
// down); expectations of key are lowered for each failed deletion.
func (c *Controller) deletePods(ctx context.Context, job *batch.Job, pods []*v1.Pod, dropFinalizer bool, key string) (podOpsResult, error) {
	var deleted, ready atomic.Int32
	errs := c.calls.run(len(pods), func(i int) error {
		p := pods[i]
		found, err := c.deleteOnePod(ctx, job, p, dropFinalizer)
		if (err != nil || !found) && key != "" {
			// The informer will not observe this deletion (failed, or the
			// pod was already gone): lower the expectation now, as upstream.
			c.podExpect.deletionObserved(key)
		}
		if err != nil {
			return err
		}
		deleted.Add(1)
		if isPodReady(p) {
			ready.Add(1)
		}
		return nil
	})
	return podOpsResult{deleted: deleted.Load(), deletedReady: ready.Load()}, errors.Join(errs...)
}

// deleteOnePod reports found=false when the pod was already gone.
func (c *Controller) deleteOnePod(ctx context.Context, job *batch.Job, p *v1.Pod, dropFinalizer bool) (found bool, err error) {
	pods := c.client.CoreV1().Pods(p.Namespace)
	if dropFinalizer && hasTrackingFinalizer(p) {
		_, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return true, fmt.Errorf("removing completion finalizer: %w", err)
		}
	}
	err = pods.Delete(ctx, p.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		c.recorder.Eventf(job, v1.EventTypeWarning, eventFailedDelete, "Error deleting: %v", err)
		return true, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.recorder.Eventf(job, v1.EventTypeNormal, eventSuccessfulDelete, "Deleted pod: %v", p.Name)
	return true, nil
}

// createPods creates the planned pods in slow-start batches (1, 2, 4, ...);
// after a batch with an error the rest is skipped and retried later.
func (c *Controller) createPods(ctx context.Context, key string, st *syncState) (podOpsResult, error) {
	todo := st.creates
	c.podExpect.expect(key, len(todo), 0)
	var failed atomic.Int32
	var firstErr error
	var succeeded int32
	for batch := min(slowStartInitialBatchSize, len(todo)); len(todo) > 0; batch = min(2*batch, len(todo)) {
		errs := c.createBatch(ctx, st.job, todo[:batch])
		todo = todo[batch:]
		nErr := 0
		for _, err := range errs {
			if err == nil {
				continue
			}
			nErr++
			c.podExpect.creationObserved(key)
			failed.Add(1)
			if firstErr == nil {
				firstErr = err
			}
		}
		succeeded += int32(batch - nErr)
		if nErr > 0 {
			for range todo {
				c.podExpect.creationObserved(key)
			}
			failed.Add(int32(len(todo)))
			break
		}
	}
	c.metrics.podsCreation.WithLabelValues(st.createReason, "succeeded").Add(float64(succeeded))
	if n := len(st.creates) - int(succeeded); n > 0 && firstErr != nil {
		c.metrics.podsCreation.WithLabelValues(st.createReason, "failed").Add(float64(n))
	}
	return podOpsResult{createsFailed: failed.Load()}, firstErr
}

func (c *Controller) createBatch(ctx context.Context, job *batch.Job, creates []podCreate) []error {
	return c.calls.run(len(creates), func(i int) error {
		return c.createPod(ctx, job, creates[i].pod)
	})
}

func (c *Controller) createPod(ctx context.Context, job *batch.Job, pod *v1.Pod) error {
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(job, v1.EventTypeWarning, eventFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("create pod for job %s: %w", jobKey(job), err)
	}
	c.recorder.Eventf(job, v1.EventTypeNormal, eventSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// trackAndFlush runs the finalizer protocol (runTracking) through the API,
// then records what the writes committed: the sync's events, the
// backoff record and the metrics.
func (c *Controller) trackAndFlush(ctx context.Context, key string, st *syncState, observed *batch.JobStatus) error {
	res, err := runTracking(st, observed, apiEffects{c: c, ctx: ctx, key: key})
	for action, n := range res.plan.pfpActions {
		c.metrics.pfpHandled.WithLabelValues(string(action)).Add(float64(n))
	}
	if res.wroteStatus || err == nil {
		// Committed: a status write succeeded (a retried sync would
		// otherwise record them again), or nothing needed writing.
		c.backoff.set(key, st.newBackoff)
		c.emitEvents(st)
	}
	if res.wroteStatus {
		c.recordIndexes(st.job, res.plan)
	}
	if res.finished {
		c.recordFinished(st.job, st.finishedCond)
	}
	return err
}

// apiEffects are the protocol's writes through client-go.
type apiEffects struct {
	c   *Controller
	ctx context.Context
	key string
}

func (e apiEffects) writeStatus(st *syncState, before *batch.JobStatus) error {
	return e.c.updateStatus(e.ctx, st, before)
}

func (e apiEffects) removeFinalizers(pods []*v1.Pod) (sets.Set[types.UID], error) {
	return e.c.removeFinalizers(e.ctx, e.key, pods)
}

// emitEvents records the events of the sync once its status is written.
// They follow the write: a sync whose write conflicts (a stale cache, a
// concurrent spec change) is retried, and its events would otherwise be
// recorded once per try (a Resumed with count 2).
func (c *Controller) emitEvents(st *syncState) {
	for _, ev := range st.events {
		c.recorder.Event(st.job, ev.kind, ev.reason, ev.message)
	}
}

// updateStatus writes st.job's status (PUT /status) and keeps the returned
// object, so a later write in the same sync carries the new resourceVersion.
func (c *Controller) updateStatus(ctx context.Context, st *syncState, previous *batch.JobStatus) error {
	from := st.job.ResourceVersion
	updated, err := c.client.BatchV1().Jobs(st.job.Namespace).UpdateStatus(ctx, st.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.ownWrites.Wrote(jobKey(updated), from, updated.ResourceVersion)
	status := st.job.Status
	st.job = updated
	st.job.Status = status
	c.recordPodsFinished(updated, previous)
	return nil
}

// removeFinalizers patches the tracking finalizer off the pods in parallel
// and returns the UIDs that no longer carry it (NotFound counts as gone).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*v1.Pod) (sets.Set[types.UID], error) {
	removed := sets.New[types.UID]()
	if len(pods) == 0 {
		return removed, nil
	}
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	c.finalizerExp.expectRemoved(key, uids)
	ok := make([]bool, len(pods))
	errs := c.calls.run(len(pods), func(i int) error {
		p := pods[i]
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
		if err != nil {
			c.finalizerExp.observed(key, p.UID)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing tracking finalizer from pod %s: %w", p.Name, err)
			}
		}
		ok[i] = true
		return nil
	})
	for i, p := range pods {
		if ok[i] {
			removed.Insert(p.UID)
		}
	}
	return removed, errors.Join(errs...)
}

// recordFinished counts the finished Job in the metrics and remembers it
// until the informer shows its terminal status.
func (c *Controller) recordFinished(job *batch.Job, cond *batch.JobCondition) {
	result := "failed"
	if cond.Type == batch.JobComplete {
		result = "succeeded"
	}
	c.metrics.jobsFinished.WithLabelValues(completionModeOf(job), result, cond.Reason).Inc()
	c.markFinished(job)
}

func (c *Controller) recordPodsFinished(job *batch.Job, previous *batch.JobStatus) {
	mode := completionModeOf(job)
	if d := job.Status.Succeeded - previous.Succeeded; d > 0 {
		c.metrics.podsFinished.WithLabelValues(mode, "succeeded").Add(float64(d))
	}
	if d := job.Status.Failed - previous.Failed; d > 0 {
		c.metrics.podsFinished.WithLabelValues(mode, "failed").Add(float64(d))
	}
}

func (c *Controller) recordIndexes(job *batch.Job, tp *trackPlan) {
	limit := "global"
	if job.Spec.BackoffLimitPerIndex != nil {
		limit = "perIndex"
	}
	if tp.newSucceededIxs > 0 {
		c.metrics.finishedIndexes.WithLabelValues("succeeded", limit).Add(float64(tp.newSucceededIxs))
	}
	if tp.newFailedIndexes > 0 {
		c.metrics.finishedIndexes.WithLabelValues("failed", limit).Add(float64(tp.newFailedIndexes))
	}
	tp.newSucceededIxs, tp.newFailedIndexes = 0, 0
}
