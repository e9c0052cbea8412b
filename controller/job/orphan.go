package job

import (
	"context"
	"fmt"

	batch "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// removeFinalizerPatch drops the tracking finalizer with a strategic-merge
// directive, leaving any other finalizer in place.
var removeFinalizerPatch = []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batch.JobTrackingFinalizer + `"]}}`)

// syncOrphanPod strips the tracking finalizer from a pod whose Job is gone,
// finished, or that no Job controls, so the pod can be deleted.
func (c *Controller) syncOrphanPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
			return nil // some other controller owns it
		}
		if job := c.resolveControllerRef(ns, ref); job != nil {
			if _, external := c.managedByExternal(job); external || !IsJobFinished(job) {
				return nil
			}
		}
	}
	_, err = c.client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove tracking finalizer from orphan pod %s: %w", key, err)
	}
	return nil
}
