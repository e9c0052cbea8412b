// Package podsubresources serves the pod subresources that write the pod
// itself, as kube-apiserver's pod storage does: pods/binding (the
// scheduler's assignment to a node) and pods/eviction (a graceful delete
// marked DisruptionTarget). It reads and writes pods only through
// Objects; the proxied subresources (log, exec, attach) are nodeproxy's.
package podsubresources

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/query"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// Objects reads, updates and deletes pods for the handlers, as the
// server's generic store does for every resource.
type Objects interface {
	// Get reads a fresh copy of an object.
	Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, error)
	// Update writes what mutate builds from the current object through
	// res's strategy in mode, retrying on conflict. mutate gets the shared
	// current object: it only reads it and returns a new one.
	Update(ctx context.Context, res *registry.Resource, namespace, name string, mode strategy.Mode, dryRun bool,
		mutate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// Delete deletes an object as a DELETE request with opts does.
	Delete(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) error
}

// Handlers serves pods/binding and pods/eviction.
type Handlers struct {
	Objects Objects
	Codec   *endpoints.Codec
	// Clock stamps the conditions the handlers set.
	Clock clock.PassiveClock
}

// Binding assigns a pod to a node (pods/binding).
func (h *Handlers) Binding(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	b := &corev1.Binding{}
	if err := h.Codec.DecodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Binding"), b); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if err := h.Bind(r.Context(), info, b, query.DryRun(r.URL.Query())); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	endpoints.WriteJSON(w, http.StatusCreated, endpoints.SuccessStatus(http.StatusCreated, nil))
}

// Bind assigns the pod info names to b's target: the typed part of
// Binding, which in-process clients call directly.
func (h *Handlers) Bind(ctx context.Context, info endpoints.RequestInfo, b *corev1.Binding, dryRun bool) error {
	if b.Target.Name == "" {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, info.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	_, err := h.Objects.Update(ctx, info.Res, info.Namespace, info.Name, strategy.Raw, dryRun, func(cur runtime.Object) (runtime.Object, error) {
		return h.bound(cur.(*corev1.Pod), b, info.Res.GroupResource())
	})
	return err
}

// bound is the pod cur assigned to b's target, or why it cannot be: a
// UID precondition that fails, a pod being deleted or already assigned.
func (h *Handlers) bound(cur *corev1.Pod, b *corev1.Binding, gr schema.GroupResource) (*corev1.Pod, error) {
	pod := boundCopy(cur, len(b.Annotations) > 0)
	if b.UID != "" && b.UID != pod.UID {
		return nil, genericstore.UIDPreconditionFailed(gr, pod.Name, b.UID, pod.UID)
	}
	if pod.DeletionTimestamp != nil {
		return nil, apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	}
	if pod.Spec.NodeName != "" {
		return nil, apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = b.Target.Name
	for k, v := range b.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(h.Clock.Now())})
	pod.ResourceVersion = ""
	return pod, nil
}

// boundCopy is what a binding may change of the shared current pod: the
// pod and its spec, status conditions and (withAnnotations) annotations are
// its own, the rest is shared and only read (a raw write runs no strategy;
// it encodes the pod and stores it).
func boundCopy(cur *corev1.Pod, withAnnotations bool) *corev1.Pod {
	pod := *cur
	pod.Status.Conditions = slices.Clone(cur.Status.Conditions)
	if withAnnotations {
		pod.Annotations = maps.Clone(cur.Annotations)
	}
	return &pod
}

// setPodCondition sets c, keeping the transition time of an unchanged status.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// Eviction marks the pod DisruptionTarget and deletes it gracefully
// (pods/eviction).
func (h *Handlers) Eviction(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	ev := &policyv1.Eviction{}
	data, err := h.Codec.ReadBody(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if err := h.Codec.DecodeLoose(r, data, ev); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if ev.Name != "" && ev.Name != info.Name {
		endpoints.WriteError(w, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	if err := h.evict(r.Context(), info, ev.DeleteOptions); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	endpoints.WriteJSON(w, http.StatusCreated, endpoints.SuccessStatus(http.StatusCreated, nil))
}

// evict marks a running pod DisruptionTarget and deletes it with opts; a
// pod gone meanwhile is no error.
func (h *Handlers) evict(ctx context.Context, info endpoints.RequestInfo, opts *metav1.DeleteOptions) error {
	cur, err := h.Objects.Get(ctx, info.Res, info.Namespace, info.Name)
	if err != nil {
		return err
	}
	pod := cur.(*corev1.Pod)
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if pod.DeletionTimestamp == nil && !terminal {
		_, err = h.Objects.Update(ctx, info.Res, info.Namespace, info.Name, strategy.Status, false, func(cur runtime.Object) (runtime.Object, error) {
			p := cur.DeepCopyObject().(*corev1.Pod)
			setPodCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(h.Clock.Now())})
			p.ResourceVersion = ""
			return p, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if err := h.Objects.Delete(ctx, info.Res, info.Namespace, info.Name, opts); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
