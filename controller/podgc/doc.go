// Package podgc is the pod garbage collector: it deletes terminated pods above
// a threshold, pods bound to nodes that no longer exist, and unscheduled pods
// that are terminating, like kube-controller-manager's podgc controller. With
// PolicyCounted it also deletes, as its pod informer reports them, the
// terminated pods their Job has counted and no longer reads, keeping each
// Job's newest, so that memory follows the live pods rather than the history.
package podgc
