package job

import (
	"context"
	"encoding/json"
	"fmt"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// getPodsForJob returns the pods the Job controls after adopting matching
// orphans (controllerRef and tracking finalizer added in one patch) and
// releasing owned pods that no longer match its selector.
func (c *Controller) getPodsForJob(ctx context.Context, job *batch.Job) ([]*v1.Pod, error) {
	withSettled := c.claimSettledScan(job)
	pods, err := c.claimPods(ctx, job, withSettled)
	if err != nil && withSettled {
		c.settledChanged(job.UID) // look at the settled pods again next time
	}
	return pods, err
}

func (c *Controller) claimPods(ctx context.Context, job *batch.Job, withSettled bool) ([]*v1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("parse selector of job %s: %w", jobKey(job), err)
	}
	candidates, err := c.candidatePods(job, withSettled)
	if err != nil {
		return nil, err
	}
	var out []*v1.Pod
	canAdopt := adoptionCheck(ctx, c, job)
	for _, p := range candidates {
		ref := metav1.GetControllerOfNoCopy(p)
		matches := sel.Matches(labels.Set(p.Labels))
		switch {
		case ref != nil && ref.UID == job.UID && matches:
			out = append(out, p)
		case ref != nil && ref.UID == job.UID:
			if job.DeletionTimestamp == nil {
				if err := c.releasePod(ctx, job, p); err != nil {
					return nil, err
				}
			}
		case ref == nil && matches && p.DeletionTimestamp == nil && job.DeletionTimestamp == nil:
			adopted, err := c.adoptPod(ctx, job, p, canAdopt)
			if err != nil {
				return nil, err
			}
			if adopted != nil {
				out = append(out, adopted)
			}
		}
	}
	return out, nil
}

// candidatePods lists the Job's live pods and the namespace's orphans, and
// with withSettled also the Job's settled pods.
func (c *Controller) candidatePods(job *batch.Job, withSettled bool) ([]*v1.Pod, error) {
	keys := []string{string(job.UID), orphanIndexPrefix + job.Namespace}
	if withSettled {
		keys = append(keys, settledIndexPrefix+string(job.UID))
	}
	lists := make([][]any, 0, len(keys))
	n := 0
	for _, key := range keys {
		objs, err := c.podIndexer.ByIndex(podByJobIndex, key)
		if err != nil {
			return nil, fmt.Errorf("list pods of job %s: %w", jobKey(job), err)
		}
		lists = append(lists, objs)
		n += len(objs)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]*v1.Pod, 0, n)
	for _, objs := range lists {
		for _, o := range objs {
			if p := o.(*v1.Pod); p.Namespace == job.Namespace {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// adoptionCheck returns a memoised check, done at most once per sync with an
// uncached GET, that the Job still exists with the same UID and is not
// being deleted.
func adoptionCheck(ctx context.Context, c *Controller, job *batch.Job) func() error {
	var done bool
	var result error
	return func() error {
		if done {
			return result
		}
		done = true
		fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			result = fmt.Errorf("recheck job %s before adoption: %w", jobKey(job), err)
		case fresh.UID != job.UID:
			result = fmt.Errorf("job %s was recreated (uid %s, want %s)", jobKey(job), fresh.UID, job.UID)
		case fresh.DeletionTimestamp != nil:
			result = fmt.Errorf("job %s is being deleted", jobKey(job))
		}
		return result
	}
}

func (c *Controller) adoptPod(ctx context.Context, job *batch.Job, p *v1.Pod, check func() error) (*v1.Pod, error) {
	if err := check(); err != nil {
		c.log.Info("not adopting pods", "job", jobKey(job), "err", err)
		return nil, nil
	}
	ref := newControllerRef(job)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*ref},
		"uid":             p.UID,
		"finalizers":      []string{batch.JobTrackingFinalizer},
	}})
	if err != nil {
		return nil, err
	}
	adopted, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.log.Info("adopted pod", "job", jobKey(job), "pod", p.Name)
	return adopted, nil
}

func (c *Controller) releasePod(ctx context.Context, job *batch.Job, p *v1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": job.UID}},
		"uid":             p.UID,
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("release pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
