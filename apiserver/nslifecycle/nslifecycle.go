// Package nslifecycle finishes the deletion of namespaces, as
// kube-controller-manager's namespace controller does: a namespace being
// deleted (Terminating) has everything in it deleted, then its "kubernetes"
// finalizer dropped, then it is removed once no finalizer remains.
//
// It is a loop outside the request path, started by the API server over a
// narrow Store (list, delete, and the namespace's own raw writes). Request
// handlers only Wake it after a namespace is marked for deletion or
// finalized, so the work starts at once instead of at the next tick.
package nslifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Store is what the loop needs from the API server.
type Store interface {
	// Namespaces lists every namespace.
	Namespaces(ctx context.Context) ([]*corev1.Namespace, error)
	// Namespace reads one namespace (NotFound when gone).
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
	// Resources are the namespaced resources whose objects go with their
	// namespace (each stored resource once).
	Resources() []*registry.Resource
	// Objects lists the objects of res in namespace.
	Objects(ctx context.Context, res *registry.Resource, namespace string) ([]metav1.Object, error)
	// Delete deletes an object with background propagation; gone is false
	// when it stays for now (finalizers, graceful deletion).
	Delete(ctx context.Context, res *registry.Resource, namespace, name string) (gone bool, err error)
	// Write stores ns as it is, if it is still at its resourceVersion.
	Write(ctx context.Context, ns *corev1.Namespace) error
	// Remove deletes ns from storage, if it is still at its
	// resourceVersion; a namespace already gone is no error.
	Remove(ctx context.Context, ns *corev1.Namespace) error
}

// Loop finishes terminating namespaces.
type Loop struct {
	store    Store
	interval time.Duration
	clock    clock.Clock
	log      *slog.Logger
	wake     chan struct{}
}

// New returns a loop re-checking terminating namespaces every interval.
func New(store Store, interval time.Duration, clk clock.Clock, log *slog.Logger) *Loop {
	return &Loop{store: store, interval: interval, clock: clk, log: log, wake: make(chan struct{}, 1)}
}

// Wake makes the loop check now (it never blocks).
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run syncs terminating namespaces at start, an interval after each pass
// and when woken, until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	for {
		l.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-l.clock.After(l.interval):
		case <-l.wake:
		}
	}
}

// Sync makes one pass over the terminating namespaces; failures are logged
// and retried on the next pass.
func (l *Loop) Sync(ctx context.Context) {
	all, err := l.store.Namespaces(ctx)
	if err != nil {
		l.log.Warn("list namespaces", "err", err)
		return
	}
	for _, ns := range all {
		if ns.DeletionTimestamp == nil {
			continue
		}
		if len(ns.Spec.Finalizers) == 0 {
			// Finalized (through the finalize subresource): remove it.
			if err := l.finalize(ctx, ns.Name); err != nil {
				l.log.Warn("remove finalized namespace", "namespace", ns.Name, "err", err)
			}
			continue
		}
		if err := l.finish(ctx, ns.Name); err != nil {
			l.log.Warn("finish namespace deletion", "namespace", ns.Name, "err", err)
		}
	}
}

// finish deletes everything in a terminating namespace and finalizes the
// namespace once it is empty.
func (l *Loop) finish(ctx context.Context, name string) error {
	remaining, err := l.deleteContent(ctx, name)
	if err != nil || remaining > 0 {
		return err
	}
	return l.finalize(ctx, name)
}

// deleteContent deletes the objects of a namespace and counts those still
// there (being deleted).
func (l *Loop) deleteContent(ctx context.Context, namespace string) (remaining int, err error) {
	for _, res := range l.store.Resources() {
		objs, err := l.store.Objects(ctx, res, namespace)
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", res.GVR.Resource, err)
		}
		for _, obj := range objs {
			if obj.GetDeletionTimestamp() != nil {
				remaining++
				continue
			}
			gone, err := l.store.Delete(ctx, res, namespace, obj.GetName())
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, fmt.Errorf("delete %s %s: %w", res.GVR.Resource, obj.GetName(), err)
			}
			if err == nil && !gone {
				remaining++
			}
		}
	}
	return remaining, nil
}

// finalize drops the namespace's spec finalizers (the "kubernetes" one)
// and removes it when no metadata finalizers remain either.
func (l *Loop) finalize(ctx context.Context, name string) error {
	ns, err := l.store.Namespace(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ns.Finalizers) == 0 {
		if err := l.store.Remove(ctx, ns); err != nil {
			return fmt.Errorf("delete namespace %s: %w", name, err)
		}
		return nil
	}
	if len(ns.Spec.Finalizers) == 0 {
		return nil
	}
	ns.Spec.Finalizers = nil
	if err := l.store.Write(ctx, ns); err != nil {
		return fmt.Errorf("update namespace %s: %w", name, err)
	}
	return nil
}
