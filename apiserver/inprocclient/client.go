// Package inprocclient is a kubernetes.Interface for components running in
// the API server's process: the hot calls of the controllers, the
// scheduler and the embedded agent (pod create, patch, status update,
// delete, get and bind; Job status updates and patches; event creates and
// patches; the agent's ConfigMap and Secret gets and TokenRequests) go
// straight to the server's typed write path (Server), with no
// protobuf encoding, HTTP plumbing or decoding in between; every other
// call, and any call this package does not serve exactly (apply patches,
// unusual options or names), goes through the wrapped HTTP clientset. The
// control-plane assembly chooses it; components see only client-go's
// interfaces and run unchanged against a real cluster.
package inprocclient

import (
	"context"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
)

// Server is the API server's typed entry to its write path
// (apiserver.InProcessCalls). It never keeps the objects it is given and
// returns objects the caller owns, with errors as client-go would return
// them from the same request over HTTP.
type Server interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, subresource string) (runtime.Object, error)
	Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error)
	Update(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, opts metav1.UpdateOptions, subresource string) (runtime.Object, error)
	Patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource string) (runtime.Object, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error
	Bind(ctx context.Context, namespace string, b *corev1.Binding, opts metav1.CreateOptions) error
}

// TokenServer is the typed entry to the TokenRequest API
// (apiserver.InProcessCalls); a Server without it sends token requests
// over HTTP.
type TokenServer interface {
	CreateToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// New wraps the HTTP clientset over the same server: the calls this
// package serves go to srv, the rest to http.
func New(http kubernetes.Interface, srv Server) kubernetes.Interface {
	return &clientset{Interface: http, srv: srv}
}

type clientset struct {
	kubernetes.Interface
	srv Server
}

func (c *clientset) CoreV1() corev1client.CoreV1Interface {
	return coreV1{CoreV1Interface: c.Interface.CoreV1(), srv: c.srv}
}

func (c *clientset) BatchV1() batchv1client.BatchV1Interface {
	return batchV1{BatchV1Interface: c.Interface.BatchV1(), srv: c.srv}
}

func (c *clientset) EventsV1() eventsv1client.EventsV1Interface {
	return eventsV1{EventsV1Interface: c.Interface.EventsV1(), srv: c.srv}
}

type coreV1 struct {
	corev1client.CoreV1Interface
	srv Server
}

func (c coreV1) Pods(namespace string) corev1client.PodInterface {
	return &pods{PodInterface: c.CoreV1Interface.Pods(namespace), typed: newTyped[*corev1.Pod](c.srv, "", "v1", "pods", namespace)}
}

func (c coreV1) ConfigMaps(namespace string) corev1client.ConfigMapInterface {
	return &configMaps{ConfigMapInterface: c.CoreV1Interface.ConfigMaps(namespace), typed: newTyped[*corev1.ConfigMap](c.srv, "", "v1", "configmaps", namespace)}
}

func (c coreV1) Secrets(namespace string) corev1client.SecretInterface {
	return &secrets{SecretInterface: c.CoreV1Interface.Secrets(namespace), typed: newTyped[*corev1.Secret](c.srv, "", "v1", "secrets", namespace)}
}

func (c coreV1) ServiceAccounts(namespace string) corev1client.ServiceAccountInterface {
	sa := c.CoreV1Interface.ServiceAccounts(namespace)
	ts, ok := c.srv.(TokenServer)
	if !ok {
		return sa
	}
	return &serviceAccounts{ServiceAccountInterface: sa, srv: ts, namespace: namespace}
}

func (c coreV1) Events(namespace string) corev1client.EventInterface {
	return &coreEvents{EventInterface: c.CoreV1Interface.Events(namespace), typed: newTyped[*corev1.Event](c.srv, "", "v1", "events", namespace)}
}

type batchV1 struct {
	batchv1client.BatchV1Interface
	srv Server
}

func (c batchV1) Jobs(namespace string) batchv1client.JobInterface {
	return &jobs{JobInterface: c.BatchV1Interface.Jobs(namespace), typed: newTyped[*batchv1.Job](c.srv, "batch", "v1", "jobs", namespace)}
}

type eventsV1 struct {
	eventsv1client.EventsV1Interface
	srv Server
}

func (c eventsV1) Events(namespace string) eventsv1client.EventInterface {
	return &events{EventInterface: c.EventsV1Interface.Events(namespace), typed: newTyped[*eventsv1.Event](c.srv, "events.k8s.io", "v1", "events", namespace)}
}

// typed serves one resource in one namespace ("" for all or cluster
// scope) for objects of type T.
type typed[T runtime.Object] struct {
	srv       Server
	gvr       schema.GroupVersionResource
	namespace string
}

func newTyped[T runtime.Object](srv Server, group, version, resource, namespace string) typed[T] {
	return typed[T]{srv: srv, gvr: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, namespace: namespace}
}

// serves reports whether a call with these names is one client-go would
// send as is: a done context, or a name or namespace client-go refuses or
// escapes, take the HTTP path so its exact error comes back.
func serves(ctx context.Context, namespace, name string, needName bool) bool {
	if ctx.Err() != nil || (needName && name == "") {
		return false
	}
	if name != "" && len(rest.IsValidPathSegmentName(name)) > 0 {
		return false
	}
	return namespace == "" || len(rest.IsValidPathSegmentName(namespace)) == 0
}

// servesSub reports whether subresources name one this package serves:
// the object itself or its status.
func servesSub(subresources []string) (string, bool) {
	switch {
	case len(subresources) == 0:
		return "", true
	case len(subresources) == 1 && subresources[0] == "status":
		return "status", true
	}
	return "", false
}

// as is out as T. On an error it is an empty object, as client-go's typed
// clients answer (they decode into a new object and return it).
func as[T runtime.Object](out runtime.Object, err error) (T, error) {
	if err != nil || out == nil {
		return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T), err
	}
	return out.(T), nil
}

func (t typed[T]) create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return as[T](t.srv.Create(ctx, t.gvr, t.namespace, obj, opts))
}

func (t typed[T]) update(ctx context.Context, obj T, opts metav1.UpdateOptions, sub string) (T, error) {
	return as[T](t.srv.Update(ctx, t.gvr, t.namespace, obj, opts, sub))
}

func (t typed[T]) patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub string) (T, error) {
	return as[T](t.srv.Patch(ctx, t.gvr, t.namespace, name, pt, data, opts, sub))
}

func (t typed[T]) get(ctx context.Context, name string) (T, error) {
	return as[T](t.srv.Get(ctx, t.gvr, t.namespace, name, ""))
}

// servesObject reports whether obj (a Create or Update's body) can be
// served in-process.
func servesObject(ctx context.Context, namespace string, obj metav1.Object, isNil, needName bool) bool {
	if isNil {
		return false
	}
	return serves(ctx, namespace, obj.GetName(), needName)
}

// servesPatch reports whether a patch can be served in-process: not an
// apply patch (server-side apply stays on HTTP).
func servesPatch(ctx context.Context, namespace, name string, pt types.PatchType, subresources []string) (string, bool) {
	sub, ok := servesSub(subresources)
	return sub, ok && pt != types.ApplyPatchType && serves(ctx, namespace, name, true)
}
