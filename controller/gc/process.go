package gc

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// processDelete handles one attemptToDelete item: verify a virtual node,
// finish a foreground deletion, or collect a dependent.
func (c *Controller) processDelete(ctx context.Context, uid types.UID) error {
	n, ok := c.graph.get(uid)
	if !ok {
		return nil
	}
	if n.beingDeleted && !n.deletingDependents {
		return nil
	}
	latest, err := c.getLive(ctx, n.id)
	if err != nil {
		return err
	}
	if latest == nil {
		if n.virtual {
			c.schedule(c.graph.markAbsent(uid))
		}
		return nil
	}
	if n.virtual {
		// It exists: its informer reported it when the graph did not keep
		// it (a plain leaf), or will.
		c.schedule(c.graph.observeVerified(n.id.res, latest))
		return nil
	}
	if isDeletingDependents(latest) {
		return c.processForegroundOwner(ctx, n.id, latest)
	}
	return c.processDependent(ctx, n.id, latest)
}

// processForegroundOwner removes foregroundDeletion once no blocking
// dependent is left, and otherwise revisits those dependents.
func (c *Controller) processForegroundOwner(ctx context.Context, id identity, latest metav1.Object) error {
	var deps []blockingDependent
	for _, d := range c.graph.dependentsOf(id.uid) {
		deps = append(deps, blockingDependent{uid: d.id.uid, blocks: d.blocksOwner(id.uid), deletingDependents: d.deletingDependents})
	}
	done, visit := decideForegroundOwner(deps)
	if !done {
		for _, uid := range visit {
			c.attemptToDelete.Add(uid)
		}
		return nil
	}
	return c.removeFinalizer(ctx, id, latest, FinalizerForeground)
}

// processDependent classifies latest's owners and applies the decision.
func (c *Controller) processDependent(ctx context.Context, id identity, latest metav1.Object) error {
	refs := latest.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	owners := make([]classifiedRef, 0, len(refs))
	for _, r := range refs {
		st, err := c.ownerState(ctx, id.namespace, r)
		if err != nil {
			return err
		}
		owners = append(owners, classifiedRef{ref: r, state: st})
	}
	hasDeps, depDeleting := c.graph.hasDependents(id.uid)
	v := dependentView{
		beingDeleted: latest.GetDeletionTimestamp() != nil, deletingDependents: isDeletingDependents(latest),
		finalizers: latest.GetFinalizers(), hasDependents: hasDeps, dependentDeletingDependents: depDeleting, owners: owners,
	}
	return c.apply(ctx, id, latest, decideDependent(v))
}

// apply carries out an action on a dependent.
func (c *Controller) apply(ctx context.Context, id identity, latest metav1.Object, a action) error {
	switch a.kind {
	case actRemoveOwnerRefs:
		patch, ok := removeOwnerRefsPatch(latest, a.uids)
		if !ok {
			return nil
		}
		c.log.Info("removing dangling ownerReferences", "resource", id.res.GVR.Resource, "namespace", id.namespace, "name", id.name, "owners", a.uids)
		if err := c.patch(ctx, id, patch); err != nil {
			return fmt.Errorf("remove ownerReferences of %s %s/%s: %w", id.res.Kind, id.namespace, id.name, err)
		}
		c.metrics.orphaned.Add(float64(len(a.uids)))
	case actDelete:
		if a.unblock {
			if patch, ok := unblockPatch(latest); ok {
				if err := c.patch(ctx, id, patch); err != nil {
					return fmt.Errorf("unblock ownerReferences of %s %s/%s: %w", id.res.Kind, id.namespace, id.name, err)
				}
			}
		}
		return c.delete(ctx, id, a.policy)
	}
	return nil
}

// ownerState classifies one ownerReference, from the graph when the owner
// was observed and with a live GET otherwise.
func (c *Controller) ownerState(ctx context.Context, namespace string, r metav1.OwnerReference) (ownerState, error) {
	if c.graph.absent.has(r.UID) {
		return ownerDangling, nil
	}
	if n, ok := c.graph.get(r.UID); ok && !n.virtual {
		if n.deletingDependents {
			return ownerWaiting, nil
		}
		return ownerSolid, nil
	}
	res, ok := c.mapper.lookup(r.APIVersion, r.Kind)
	if !ok {
		return ownerSolid, nil // unknown kinds are never collected
	}
	if !res.Namespaced {
		namespace = ""
	}
	owner, err := c.getLive(ctx, identity{res: res, namespace: namespace, name: r.Name, uid: r.UID})
	if err != nil {
		return ownerSolid, err
	}
	if owner == nil {
		c.schedule(c.graph.markAbsent(r.UID))
		return ownerDangling, nil
	}
	if isDeletingDependents(owner) {
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// getLive reads the object; nil when absent or replaced by another UID.
func (c *Controller) getLive(ctx context.Context, id identity) (*metav1.PartialObjectMetadata, error) {
	obj, err := c.resource(id).Get(ctx, id.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", id.res.Kind, id.namespace, id.name, err)
	}
	if obj.GetUID() != id.uid {
		return nil, nil
	}
	return obj, nil
}

func (c *Controller) resource(id identity) metadata.ResourceInterface {
	if id.res.Namespaced {
		return c.client.Resource(id.res.GVR).Namespace(id.namespace)
	}
	return c.client.Resource(id.res.GVR)
}

func (c *Controller) patch(ctx context.Context, id identity, patch []byte) error {
	_, err := c.resource(id).Patch(ctx, id.name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// delete deletes the object with a UID precondition.
func (c *Controller) delete(ctx context.Context, id identity, policy metav1.DeletionPropagation) error {
	c.log.Info("deleting object", "resource", id.res.GVR.Resource, "namespace", id.namespace, "name", id.name, "propagation", policy)
	err := c.resource(id).Delete(ctx, id.name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &id.uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or a new object now has the name
	}
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", id.res.Kind, id.namespace, id.name, err)
	}
	c.metrics.deletions.WithLabelValues(id.res.GVR.Resource).Inc()
	return nil
}

// removeFinalizer patches finalizer name away from latest.
func (c *Controller) removeFinalizer(ctx context.Context, id identity, latest metav1.Object, name string) error {
	patch, ok := removeFinalizerPatch(latest, name)
	if !ok {
		return nil
	}
	c.log.Info("removing finalizer", "finalizer", name, "resource", id.res.GVR.Resource, "namespace", id.namespace, "name", id.name)
	if err := c.patch(ctx, id, patch); err != nil {
		return fmt.Errorf("remove finalizer %s from %s %s/%s: %w", name, id.res.Kind, id.namespace, id.name, err)
	}
	return nil
}

// processOrphan strips the owner's reference from every dependent, then
// removes the owner's orphan finalizer.
func (c *Controller) processOrphan(ctx context.Context, uid types.UID) error {
	n, ok := c.graph.get(uid)
	if !ok || n.virtual {
		return nil
	}
	for _, d := range c.graph.dependentsOf(uid) {
		dep, err := c.getLive(ctx, d.id)
		if err != nil {
			return err
		}
		if dep == nil {
			continue
		}
		if err := c.apply(ctx, d.id, dep, action{kind: actRemoveOwnerRefs, uids: []types.UID{uid}}); err != nil {
			return err
		}
	}
	owner, err := c.getLive(ctx, n.id)
	if err != nil || owner == nil {
		return err
	}
	return c.removeFinalizer(ctx, n.id, owner, FinalizerOrphan)
}

func isDeletingDependents(o metav1.Object) bool {
	return o.GetDeletionTimestamp() != nil && slices.Contains(o.GetFinalizers(), FinalizerForeground)
}
