package apiserver

import (
	"context"

	"github.com/batchlet/batchlet/apiserver/endpoints/handlers"
	"github.com/batchlet/batchlet/apiserver/nodeproxy"
	"github.com/batchlet/batchlet/apiserver/podsubresources"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
	"github.com/batchlet/batchlet/apiserver/tokenrequest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podsAndNodes reads the pods and nodes the node proxy targets (fresh
// copies, as a GET reads them).
type podsAndNodes struct{ s *Server }

var _ nodeproxy.Objects = podsAndNodes{}

// sharedObjects reads the accounts, pods and nodes a TokenRequest names
// from the store's shared decoded objects (it only reads them; one token
// per pod costs no decode).
type sharedObjects struct{ s *Server }

var _ tokenrequest.Objects = sharedObjects{}

func (o sharedObjects) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, _, err := o.s.objects.GetShared(ctx, o.s.resource("", "v1", "serviceaccounts"), namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

func (o sharedObjects) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, _, err := o.s.objects.GetShared(ctx, o.s.resource("", "v1", "pods"), namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (o sharedObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	obj, _, err := o.s.objects.GetShared(ctx, o.s.resource("", "v1", "nodes"), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

func (o podsAndNodes) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, _, err := o.s.objects.Get(ctx, o.s.resource("", "v1", "pods"), namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (o podsAndNodes) Node(ctx context.Context, name string) (*corev1.Node, error) {
	obj, _, err := o.s.objects.Get(ctx, o.s.resource("", "v1", "nodes"), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// restWriter is the write path the REST handlers write through.
type restWriter struct{ s *Server }

var _ handlers.Writer = restWriter{}

func (o restWriter) Create(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	return o.s.createObject(ctx, res, obj, dryRun)
}

func (o restWriter) Update(ctx context.Context, res *registry.Resource, namespace, name string, mode strategy.Mode, dryRun bool, mutate handlers.Mutate) (runtime.Object, error) {
	return o.s.updateReading(ctx, res, namespace, name, mode, dryRun, mutate)
}

func (o restWriter) Delete(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return o.s.deleteObject(ctx, res, namespace, name, opts)
}

// podWriter reads, updates and deletes pods for the pod subresources
// through the server's write path (strategy, managed fields, finalizers).
type podWriter struct{ s *Server }

var _ podsubresources.Objects = podWriter{}

func (o podWriter) Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, error) {
	obj, _, err := o.s.objects.Get(ctx, res, namespace, name)
	return obj, err
}

func (o podWriter) Update(ctx context.Context, res *registry.Resource, namespace, name string, mode strategy.Mode, dryRun bool,
	mutate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return o.s.updateReading(ctx, res, namespace, name, mode, dryRun, mutate)
}

func (o podWriter) Delete(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) error {
	_, _, err := o.s.deleteObject(ctx, res, namespace, name, opts)
	return err
}
