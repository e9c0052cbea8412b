// Package gc is the ownerReference garbage collector: it cascades deletions
// (Background, Foreground, Orphan) from owners to their dependents the way
// kube-controller-manager's garbage collector does, for any resource, through
// the metadata client. It must not import the API server or storage.
package gc
