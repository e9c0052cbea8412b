package inprocclient

import (
	"context"
	"fmt"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
)

// pods serves the pod calls of the Job controller, the scheduler, the pod
// garbage collector and the agent in-process.
type pods struct {
	corev1client.PodInterface
	typed typed[*corev1.Pod]
}

func (c *pods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	if !servesObject(ctx, c.typed.namespace, pod, pod == nil, false) {
		return c.PodInterface.Create(ctx, pod, opts)
	}
	return c.typed.create(ctx, pod, opts)
}

func (c *pods) Update(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	if !servesObject(ctx, c.typed.namespace, pod, pod == nil, true) {
		return c.PodInterface.Update(ctx, pod, opts)
	}
	return c.typed.update(ctx, pod, opts, "")
}

func (c *pods) UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	if !servesObject(ctx, c.typed.namespace, pod, pod == nil, true) {
		return c.PodInterface.UpdateStatus(ctx, pod, opts)
	}
	return c.typed.update(ctx, pod, opts, "status")
}

func (c *pods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	sub, ok := servesPatch(ctx, c.typed.namespace, name, pt, subresources)
	if !ok {
		return c.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	return c.typed.patch(ctx, name, pt, data, opts, sub)
}

func (c *pods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	if !serves(ctx, c.typed.namespace, name, true) {
		return c.PodInterface.Get(ctx, name, opts)
	}
	return c.typed.get(ctx, name)
}

func (c *pods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if !serves(ctx, c.typed.namespace, name, true) {
		return c.PodInterface.Delete(ctx, name, opts)
	}
	return c.typed.srv.Delete(ctx, c.typed.gvr, c.typed.namespace, name, opts)
}

func (c *pods) Bind(ctx context.Context, binding *corev1.Binding, opts metav1.CreateOptions) error {
	if binding == nil || !serves(ctx, c.typed.namespace, binding.Name, true) {
		return c.PodInterface.Bind(ctx, binding, opts)
	}
	return c.typed.srv.Bind(ctx, c.typed.namespace, binding, opts)
}

// configMaps and secrets serve the reads of the agent's volume set-up
// (every pod's kube-root-ca.crt) in-process.
type configMaps struct {
	corev1client.ConfigMapInterface
	typed typed[*corev1.ConfigMap]
}

func (c *configMaps) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	if !servesGet(ctx, c.typed.namespace, name, opts) {
		return c.ConfigMapInterface.Get(ctx, name, opts)
	}
	return c.typed.get(ctx, name)
}

type secrets struct {
	corev1client.SecretInterface
	typed typed[*corev1.Secret]
}

func (c *secrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	if !servesGet(ctx, c.typed.namespace, name, opts) {
		return c.SecretInterface.Get(ctx, name, opts)
	}
	return c.typed.get(ctx, name)
}

// servesGet reports whether a Get reads the latest object, which is what
// the in-process read answers.
func servesGet(ctx context.Context, namespace, name string, opts metav1.GetOptions) bool {
	return opts.ResourceVersion == "" && namespace != "" && serves(ctx, namespace, name, true)
}

// serviceAccounts serves the agent's token requests (one per pod with a
// projected service-account token) in-process.
type serviceAccounts struct {
	corev1client.ServiceAccountInterface
	srv       TokenServer
	namespace string
}

func (c *serviceAccounts) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	if tr == nil || c.namespace == "" || !reflect.DeepEqual(opts, metav1.CreateOptions{}) || !serves(ctx, c.namespace, name, true) {
		return c.ServiceAccountInterface.CreateToken(ctx, name, tr, opts)
	}
	return c.srv.CreateToken(ctx, c.namespace, name, tr, opts)
}

// jobs serves the Job controller's status writes in-process.
type jobs struct {
	batchv1client.JobInterface
	typed typed[*batchv1.Job]
}

func (c *jobs) UpdateStatus(ctx context.Context, job *batchv1.Job, opts metav1.UpdateOptions) (*batchv1.Job, error) {
	if !servesObject(ctx, c.typed.namespace, job, job == nil, true) {
		return c.JobInterface.UpdateStatus(ctx, job, opts)
	}
	return c.typed.update(ctx, job, opts, "status")
}

func (c *jobs) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*batchv1.Job, error) {
	sub, ok := servesPatch(ctx, c.typed.namespace, name, pt, subresources)
	if !ok {
		return c.JobInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	return c.typed.patch(ctx, name, pt, data, opts, sub)
}

// coreEvents serves the core/v1 event recorder's writes in-process. The
// recorder's sink writes each event into its own namespace, which must be
// the client's unless the client has none (as client-go checks).
type coreEvents struct {
	corev1client.EventInterface
	typed typed[*corev1.Event]
}

func (c *coreEvents) Create(ctx context.Context, event *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error) {
	if !servesObject(ctx, c.typed.namespace, event, event == nil, false) {
		return c.EventInterface.Create(ctx, event, opts)
	}
	return c.typed.create(ctx, event, opts)
}

func (c *coreEvents) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Event, error) {
	sub, ok := servesPatch(ctx, c.typed.namespace, name, pt, subresources)
	if !ok {
		return c.EventInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	return c.typed.patch(ctx, name, pt, data, opts, sub)
}

// inEventNamespace is the event client of the event's namespace, or an
// error when it is not the client's, in client-go's words.
func (c *coreEvents) inEventNamespace(verb string, event *corev1.Event) (typed[*corev1.Event], error) {
	if c.typed.namespace != "" && event.Namespace != c.typed.namespace {
		return typed[*corev1.Event]{}, fmt.Errorf("can't %s an event with namespace '%v' in namespace '%v'", verb, event.Namespace, c.typed.namespace)
	}
	t := c.typed
	t.namespace = event.Namespace
	return t, nil
}

func (c *coreEvents) CreateWithEventNamespace(event *corev1.Event) (*corev1.Event, error) {
	return c.CreateWithEventNamespaceWithContext(context.Background(), event)
}

func (c *coreEvents) CreateWithEventNamespaceWithContext(ctx context.Context, event *corev1.Event) (*corev1.Event, error) {
	if event == nil || !serves(ctx, event.Namespace, "", false) {
		return c.EventInterface.CreateWithEventNamespaceWithContext(ctx, event)
	}
	t, err := c.inEventNamespace("create", event)
	if err != nil {
		return nil, err
	}
	return t.create(ctx, event, metav1.CreateOptions{})
}

func (c *coreEvents) PatchWithEventNamespace(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return c.PatchWithEventNamespaceWithContext(context.Background(), event, data)
}

func (c *coreEvents) PatchWithEventNamespaceWithContext(ctx context.Context, event *corev1.Event, data []byte) (*corev1.Event, error) {
	if event == nil || !serves(ctx, event.Namespace, event.Name, true) {
		return c.EventInterface.PatchWithEventNamespaceWithContext(ctx, event, data)
	}
	t, err := c.inEventNamespace("patch", event)
	if err != nil {
		return nil, err
	}
	return t.patch(ctx, event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "")
}

// events serves the events.k8s.io/v1 recorder's writes in-process.
type events struct {
	eventsv1client.EventInterface
	typed typed[*eventsv1.Event]
}

func (c *events) Create(ctx context.Context, event *eventsv1.Event, opts metav1.CreateOptions) (*eventsv1.Event, error) {
	if !servesObject(ctx, c.typed.namespace, event, event == nil, false) {
		return c.EventInterface.Create(ctx, event, opts)
	}
	return c.typed.create(ctx, event, opts)
}

func (c *events) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*eventsv1.Event, error) {
	sub, ok := servesPatch(ctx, c.typed.namespace, name, pt, subresources)
	if !ok {
		return c.EventInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	return c.typed.patch(ctx, name, pt, data, opts, sub)
}
