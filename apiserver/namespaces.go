package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// InitialNamespaces are the namespaces that exist from the start, like on a
// fresh cluster.
func InitialNamespaces() []string {
	return []string{"default", "kube-system", "kube-public", "kube-node-lease"}
}

// bootstrap creates the initial namespaces and their default service
// accounts when missing.
func (s *Server) bootstrap(ctx context.Context) error {
	nsRes := s.resource("", "v1", "namespaces")
	for _, name := range InitialNamespaces() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := s.createObject(ctx, nsRes, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create namespace %s: %w", name, err)
		}
		s.ensureDefaultServiceAccount(ctx, name)
	}
	return nil
}

func (s *Server) ensureDefaultServiceAccount(ctx context.Context, namespace string) {
	saRes := s.resource("", "v1", "serviceaccounts")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}
	if _, err := s.createObject(ctx, saRes, sa, false); err != nil && !apierrors.IsAlreadyExists(err) {
		s.log.Warn("create default service account", "namespace", namespace, "err", err)
	}
}

// markNamespaceDeleting moves a namespace to Terminating; the namespace loop
// empties and removes it.
func (s *Server) markNamespaceDeleting(ctx context.Context, res *registry.Resource, obj runtime.Object, kv storage.KeyValue, opts *metav1.DeleteOptions) (runtime.Object, error) {
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil {
		now := metav1.NewTime(s.clock.Now())
		zero := int64(0)
		ns.DeletionTimestamp = &now
		ns.DeletionGracePeriodSeconds = &zero
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	if len(opts.DryRun) > 0 {
		return ns, nil
	}
	data, err := encodeForStorage(res, ns)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	rev, err := s.store.Update(ctx, kv.Key, data, kv.ModRevision)
	if _, err = s.written(res, ns, rev, err); err != nil {
		return nil, err
	}
	s.wakeNamespaces()
	return ns, nil
}

func (s *Server) wakeNamespaces() {
	select {
	case s.nsWake <- struct{}{}:
	default:
	}
}

// runNamespaceLoop finishes terminating namespaces until ctx ends.
func (s *Server) runNamespaceLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.NamespaceSyncInterval)
	defer t.Stop()
	for {
		s.syncTerminatingNamespaces(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.nsWake:
		}
	}
}

func (s *Server) syncTerminatingNamespaces(ctx context.Context) {
	nsRes := s.resource("", "v1", "namespaces")
	everything := &filter{res: nsRes, labels: labels.Everything(), fields: fields.Everything()}
	lr, err := s.listObjects(ctx, nsRes, "", everything, 0, "", "", "")
	if err != nil {
		s.log.Warn("list namespaces", "err", err)
		return
	}
	for _, obj := range lr.items {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		if len(ns.Spec.Finalizers) == 0 {
			// Finalized (through the finalize subresource): remove it.
			if err := s.removeNamespace(ctx, ns.Name); err != nil {
				s.log.Warn("remove finalized namespace", "namespace", ns.Name, "err", err)
			}
			continue
		}
		if err := s.finishNamespace(ctx, ns.Name); err != nil {
			s.log.Warn("finish namespace deletion", "namespace", ns.Name, "err", err)
		}
	}
}

// finishNamespace deletes everything in a terminating namespace and removes
// the namespace once it is empty.
func (s *Server) finishNamespace(ctx context.Context, name string) error {
	remaining := 0
	bg := metav1.DeletePropagationBackground
	for _, res := range s.served.list() {
		if !res.Namespaced || res.StorageResource != "" {
			continue
		}
		everything := &filter{res: res, labels: labels.Everything(), fields: fields.Everything()}
		lr, err := s.listObjects(ctx, res, name, everything, 0, "", "", "")
		if err != nil {
			return fmt.Errorf("list %s: %w", res.GVR.Resource, err)
		}
		for _, obj := range lr.items {
			if accessor(obj).GetDeletionTimestamp() != nil {
				remaining++
				continue
			}
			_, deleted, err := s.deleteObject(ctx, res, name, accessor(obj).GetName(), &metav1.DeleteOptions{PropagationPolicy: &bg})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s: %w", res.GVR.Resource, accessor(obj).GetName(), err)
			}
			if err == nil && !deleted {
				remaining++
			}
		}
	}
	if remaining > 0 {
		return nil
	}
	return s.removeNamespace(ctx, name)
}

// removeNamespace drops the kubernetes finalizer of an emptied namespace and
// deletes it when no metadata finalizers remain.
func (s *Server) removeNamespace(ctx context.Context, name string) error {
	nsRes := s.resource("", "v1", "namespaces")
	obj, kv, err := s.getObject(ctx, nsRes, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if len(ns.Finalizers) == 0 {
		if _, _, err := s.store.Delete(ctx, kv.Key, kv.ModRevision); err != nil && err != storage.ErrNotFound {
			return fmt.Errorf("delete namespace %s: %w", name, err)
		}
		return nil
	}
	if len(ns.Spec.Finalizers) == 0 {
		return nil
	}
	ns.Spec.Finalizers = nil
	data, err := encodeForStorage(nsRes, ns)
	if err != nil {
		return err
	}
	if _, err := s.store.Update(ctx, kv.Key, data, kv.ModRevision); err != nil {
		return fmt.Errorf("update namespace %s: %w", name, err)
	}
	return nil
}

// handleFinalize serves PUT namespaces/{name}/finalize: only
// spec.finalizers changes.
func (s *Server) handleFinalize(w http.ResponseWriter, r *http.Request, info requestInfo) {
	body := &corev1.Namespace{}
	if err := s.decodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Namespace"), body); err != nil {
		s.writeError(w, err)
		return
	}
	out, err := s.updateObject(r.Context(), info.Res, "", info.Name, modeRaw, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace)
		ns.Spec.Finalizers = body.Spec.Finalizers
		ns.ResourceVersion = body.ResourceVersion
		return ns, nil
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.wakeNamespaces()
	s.writeObject(w, r, info.Res, http.StatusOK, out)
}
