package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/nslifecycle"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// markNamespaceDeleting moves a namespace to Terminating; the namespace
// lifecycle loop (package nslifecycle) empties and removes it.
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
	if _, err := s.objects.Replace(ctx, res, ns, kv); err != nil {
		return nil, err
	}
	s.namespaces.Wake()
	return ns, nil
}

// namespaceStore gives the namespace lifecycle loop the server's storage:
// content is listed and deleted through the server's own paths (watchers
// see every deletion, finalizers and graceful deletion apply), the
// namespace itself is written raw, past its strategy.
type namespaceStore struct{ s *Server }

var _ nslifecycle.Store = namespaceStore{}

func (n namespaceStore) nsRes() *registry.Resource { return n.s.resource("", "v1", "namespaces") }

func (n namespaceStore) Namespaces(ctx context.Context) ([]*corev1.Namespace, error) {
	res := n.nsRes()
	everything := genericstore.Everything(res)
	lr, err := n.s.objects.List(ctx, res, "", everything, 0, "", "", "")
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Namespace, 0, len(lr.Items))
	for _, obj := range lr.Items {
		out = append(out, obj.(*corev1.Namespace))
	}
	return out, nil
}

func (n namespaceStore) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	obj, _, err := n.s.objects.Get(ctx, n.nsRes(), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// Resources skips the resources stored as another's (events.k8s.io events
// are core events): their objects go with that one.
func (n namespaceStore) Resources() []*registry.Resource {
	var out []*registry.Resource
	for _, res := range n.s.served.list() {
		if res.Namespaced && res.StorageResource == "" {
			out = append(out, res)
		}
	}
	return out
}

func (n namespaceStore) Objects(ctx context.Context, res *registry.Resource, namespace string) ([]metav1.Object, error) {
	everything := genericstore.Everything(res)
	lr, err := n.s.objects.List(ctx, res, namespace, everything, 0, "", "", "")
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(lr.Items))
	for _, obj := range lr.Items {
		out = append(out, genericstore.Accessor(obj))
	}
	return out, nil
}

func (n namespaceStore) Delete(ctx context.Context, res *registry.Resource, namespace, name string) (bool, error) {
	bg := metav1.DeletePropagationBackground
	_, gone, err := n.s.deleteObject(ctx, res, namespace, name, &metav1.DeleteOptions{PropagationPolicy: &bg})
	return gone, err
}

func (n namespaceStore) Write(ctx context.Context, ns *corev1.Namespace) error {
	kv, err := n.storedAt(ns)
	if err != nil {
		return err
	}
	_, err = n.s.objects.Replace(ctx, n.nsRes(), ns, kv)
	return err
}

func (n namespaceStore) Remove(ctx context.Context, ns *corev1.Namespace) error {
	kv, err := n.storedAt(ns)
	if err != nil {
		return err
	}
	if _, err := n.s.objects.Delete(ctx, n.nsRes(), ns, kv); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// storedAt is where ns, as read, is stored: its key and revision.
func (n namespaceStore) storedAt(ns *corev1.Namespace) (storage.KeyValue, error) {
	rev, err := strconv.ParseInt(ns.ResourceVersion, 10, 64)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("namespace %s: resourceVersion %q: %w", ns.Name, ns.ResourceVersion, err)
	}
	return storage.KeyValue{Key: genericstore.ObjectKey(n.nsRes(), "", ns.Name), ModRevision: rev}, nil
}

// handleFinalize serves PUT namespaces/{name}/finalize: only
// spec.finalizers changes.
func (s *Server) handleFinalize(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	body := &corev1.Namespace{}
	if err := s.codec.DecodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Namespace"), body); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	out, err := s.updateObject(r.Context(), info.Res, "", info.Name, modeRaw, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace)
		ns.Spec.Finalizers = body.Spec.Finalizers
		ns.ResourceVersion = body.ResourceVersion
		return ns, nil
	})
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	s.namespaces.Wake()
	s.codec.WriteObject(w, r, info.Res, http.StatusOK, out)
}
