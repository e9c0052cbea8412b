package job

import (
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

const (
	orphanIndexPrefix  = "orphan/"
	settledIndexPrefix = "settled/"
)

// addPodIndexer indexes pods by their controlling Job UID, and orphans by
// namespace, so a sync lists only the candidate pods. Settled pods
// (terminal, finalizer gone: counted already) go under "settled/<uid>", so
// a sync does not walk the thousands of finished pods of a long Job.
func (c *Controller) addPodIndexer(inf cache.SharedIndexInformer) error {
	if _, exists := inf.GetIndexer().GetIndexers()[podByJobIndex]; exists {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{podByJobIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			if !isLive(pod) {
				return []string{settledIndexPrefix + string(ref.UID)}, nil
			}
			return []string{string(ref.UID)}, nil
		}
		return []string{orphanIndexPrefix + pod.Namespace}, nil
	}})
}

func (c *Controller) registerHandlers(podInf, jobInf cache.SharedIndexInformer) error {
	if _, err := jobInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return err
	}
	_, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: func(obj any) { c.deletePod(obj, true) },
	})
	return err
}

func jobKey(job *batch.Job) string { return job.Namespace + "/" + job.Name }

func (c *Controller) enqueue(job *batch.Job, delay time.Duration) {
	if delay <= 0 {
		c.queue.Add(jobKey(job))
		return
	}
	c.queue.AddAfter(jobKey(job), delay)
}

// managedByExternal returns the name of the controller that manages job
// instead of this one, if any.
func (c *Controller) managedByExternal(job *batch.Job) (string, bool) {
	name := ""
	if job.Spec.ManagedBy != nil {
		name = *job.Spec.ManagedBy
	}
	if c.mode.manages(name) {
		return "", false
	}
	if name == "" {
		name = batch.JobControllerName
	}
	return name, true
}

func (c *Controller) addJob(obj any) {
	job := obj.(*batch.Job)
	c.enqueue(job, 0)
	if name, ok := c.managedByExternal(job); ok {
		c.metrics.byExternal.WithLabelValues(name).Inc()
	}
}

func (c *Controller) updateJob(oldObj, newObj any) {
	oldJob, cur := oldObj.(*batch.Job), newObj.(*batch.Job)
	if oldJob.UID != cur.UID {
		c.deleteJob(oldJob)
	}
	if IsJobFinished(cur) {
		c.enqueue(cur, 0)
		c.enqueueOrphansOf(cur)
		return
	}
	if cur.Generation != oldJob.Generation {
		c.enqueue(cur, 0)
	} else {
		c.enqueue(cur, c.batchPeriod)
	}
	c.requeueForDeadline(oldJob, cur)
}

// requeueForDeadline schedules a sync at the new deadline when
// activeDeadlineSeconds was added or changed on a started Job.
func (c *Controller) requeueForDeadline(oldJob, cur *batch.Job) {
	if cur.Status.StartTime == nil || cur.Spec.ActiveDeadlineSeconds == nil {
		return
	}
	if oldJob.Spec.ActiveDeadlineSeconds != nil && *oldJob.Spec.ActiveDeadlineSeconds == *cur.Spec.ActiveDeadlineSeconds {
		return
	}
	left := time.Duration(*cur.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(cur.Status.StartTime.Time)
	c.queue.AddAfter(jobKey(cur), max(left, 0))
}

func (c *Controller) deleteJob(obj any) {
	job, ok := obj.(*batch.Job)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if job, ok = tomb.Obj.(*batch.Job); !ok {
			return
		}
	}
	c.enqueue(job, 0)
	c.forgetFinished(job)
	c.settledChanged(job.UID)
	c.enqueueOrphansOf(job)
}

// enqueueOrphansOf queues finalizer cleanup for the pods a Job controls.
func (c *Controller) enqueueOrphansOf(job *batch.Job) {
	objs, err := c.podIndexer.ByIndex(podByJobIndex, string(job.UID))
	if err != nil {
		return
	}
	for _, o := range objs {
		if p := o.(*v1.Pod); hasTrackingFinalizer(p) {
			c.orphanQueue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// resolveControllerRef returns the Job a pod's controllerRef points to, if
// it is in the cache with the same UID.
func (c *Controller) resolveControllerRef(ns string, ref *metav1.OwnerReference) *batch.Job {
	if ref == nil || ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
		return nil
	}
	job, err := c.jobLister.Jobs(ns).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*v1.Pod)
	c.recordTrackingFinalizer(nil, pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if !isLive(pod) {
			c.settledChanged(ref.UID)
		}
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil {
			c.podExpect.creationObserved(jobKey(job))
			c.enqueue(job, c.batchPeriod)
		} else if hasTrackingFinalizer(pod) {
			c.orphanQueue.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	if hasTrackingFinalizer(pod) {
		c.orphanQueue.Add(pod.Namespace + "/" + pod.Name)
	}
	for _, job := range c.matchingJobs(pod) {
		c.enqueue(job, c.batchPeriod)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	oldPod, cur := oldObj.(*v1.Pod), newObj.(*v1.Pod)
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(oldPod)
	c.noteSettledChange(oldPod, cur, oldRef, curRef) // before the resync check: a no-op on resyncs
	if oldPod.ResourceVersion == cur.ResourceVersion {
		return
	}
	c.recordTrackingFinalizer(oldPod, cur)
	if cur.DeletionTimestamp != nil {
		c.deletePod(cur, false)
		return
	}
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if job := c.resolveControllerRef(oldPod.Namespace, oldRef); job != nil {
			c.enqueue(job, c.batchPeriod)
		}
	}
	if curRef != nil {
		job := c.resolveControllerRef(cur.Namespace, curRef)
		if job == nil {
			if hasTrackingFinalizer(cur) {
				c.orphanQueue.Add(cur.Namespace + "/" + cur.Name)
			}
			return
		}
		if hasTrackingFinalizer(oldPod) && !hasTrackingFinalizer(cur) {
			c.finalizerExp.observed(jobKey(job), cur.UID)
		}
		c.enqueue(job, c.batchPeriod)
		return
	}
	if hasTrackingFinalizer(cur) {
		c.orphanQueue.Add(cur.Namespace + "/" + cur.Name)
	}
	if !labels.Equals(oldPod.Labels, cur.Labels) || oldRef != nil {
		for _, job := range c.matchingJobs(cur) {
			c.enqueue(job, c.batchPeriod)
		}
	}
}

// deletePod handles a pod that is gone (final) or being deleted.
func (c *Controller) deletePod(obj any, final bool) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if pod, ok = tomb.Obj.(*v1.Pod); !ok {
			return
		}
	}
	if final {
		c.recordTrackingFinalizer(pod, nil)
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		if hasTrackingFinalizer(pod) && !final {
			c.orphanQueue.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	job := c.resolveControllerRef(pod.Namespace, ref)
	if job == nil || IsJobFinished(job) {
		if hasTrackingFinalizer(pod) && !final {
			c.orphanQueue.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	key := jobKey(job)
	c.podExpect.deletionObserved(key)
	if final || !hasTrackingFinalizer(pod) {
		c.finalizerExp.observed(key, pod.UID)
	}
	c.enqueue(job, c.batchPeriod)
}

// matchingJobs are the Jobs of the pod's namespace whose selector matches it.
func (c *Controller) matchingJobs(pod *v1.Pod) []*batch.Job {
	jobs, err := c.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batch.Job
	for _, j := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// recordTrackingFinalizer counts finished pods gaining or losing the
// tracking finalizer (nil means absent).
func (c *Controller) recordTrackingFinalizer(oldPod, cur *v1.Pod) {
	was, is := finishedWithFinalizer(oldPod), finishedWithFinalizer(cur)
	switch {
	case !was && is:
		c.metrics.terminatedTracking.WithLabelValues("add").Inc()
	case was && !is:
		c.metrics.terminatedTracking.WithLabelValues("delete").Inc()
	}
}

func finishedWithFinalizer(p *v1.Pod) bool {
	return p != nil && hasTrackingFinalizer(p) && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
}

func (c *Controller) forgetFinished(job *batch.Job) {
	c.finishedJobsMu.Lock()
	defer c.finishedJobsMu.Unlock()
	delete(c.finishedJobs, job.UID)
}

// noteSettledChange marks the Jobs whose settled pods must be walked again
// on their next sync: a pod changed labels or controller while settled (it
// may have to be released), which the live-only listing would not see.
func (c *Controller) noteSettledChange(oldPod, cur *v1.Pod, oldRef, curRef *metav1.OwnerReference) {
	sameRef := (oldRef == nil) == (curRef == nil) && (oldRef == nil || oldRef.UID == curRef.UID)
	if sameRef && labels.Equals(oldPod.Labels, cur.Labels) {
		return
	}
	for _, ref := range []*metav1.OwnerReference{oldRef, curRef} {
		if ref != nil {
			c.settledChanged(ref.UID)
		}
	}
}

// settledChanged forgets that the Job's settled pods were checked.
func (c *Controller) settledChanged(uid types.UID) {
	c.settledMu.Lock()
	defer c.settledMu.Unlock()
	delete(c.settledScanned, uid)
}

// claimSettledScan tells whether this listing must include settled pods —
// the first sync of the Job in this controller, a settled pod changed
// labels or controller since the last full listing, or the pod failure
// policy's FailJob rules scan every failed pod — and records the full
// listing before it happens, so a change seen meanwhile asks for another.
func (c *Controller) claimSettledScan(job *batch.Job) bool {
	if job.Spec.PodFailurePolicy != nil {
		return true
	}
	c.settledMu.Lock()
	defer c.settledMu.Unlock()
	if c.settledScanned[job.UID] {
		return false
	}
	c.settledScanned[job.UID] = true
	return true
}
