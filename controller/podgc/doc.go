// Package podgc is the pod garbage collector: it deletes terminated pods above
// a threshold, pods bound to nodes that no longer exist, and unscheduled pods
// that are terminating, like kube-controller-manager's podgc controller.
package podgc
