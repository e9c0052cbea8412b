package apiserver

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// handleBinding assigns a pod to a node (pods/binding).
func (s *Server) handleBinding(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	b := &corev1.Binding{}
	if err := s.codec.DecodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Binding"), b); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if b.Target.Name == "" {
		endpoints.WriteError(w, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, info.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")}))
		return
	}
	_, err := s.updateReading(r.Context(), info.Res, info.Namespace, info.Name, modeRaw, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		pod := boundCopy(cur.(*corev1.Pod), len(b.Annotations) > 0)
		if b.UID != "" && b.UID != pod.UID {
			return nil, uidPreconditionFailed(info.Res.GroupResource(), pod.Name, b.UID, pod.UID)
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(info.Res.GroupResource(), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(info.Res.GroupResource(), pod.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.clock.Now())})
		pod.ResourceVersion = ""
		return pod, nil
	})
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	endpoints.WriteJSON(w, http.StatusCreated, endpoints.SuccessStatus(http.StatusCreated, nil))
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

// handleEviction marks the pod DisruptionTarget and deletes it gracefully.
func (s *Server) handleEviction(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	ev := &policyv1.Eviction{}
	data, err := s.codec.ReadBody(r)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if err := s.codec.DecodeLoose(r, data, ev); err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if ev.Name != "" && ev.Name != info.Name {
		endpoints.WriteError(w, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	ctx := r.Context()
	cur, _, err := s.objects.Get(ctx, info.Res, info.Namespace, info.Name)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	pod := cur.(*corev1.Pod)
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if pod.DeletionTimestamp == nil && !terminal {
		_, err = s.updateObject(ctx, info.Res, info.Namespace, info.Name, modeStatus, false, func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			setPodCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(s.clock.Now())})
			p.ResourceVersion = ""
			return p, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			endpoints.WriteError(w, err)
			return
		}
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if _, _, err := s.deleteObject(ctx, info.Res, info.Namespace, info.Name, opts); err != nil && !apierrors.IsNotFound(err) {
		endpoints.WriteError(w, err)
		return
	}
	endpoints.WriteJSON(w, http.StatusCreated, endpoints.SuccessStatus(http.StatusCreated, nil))
}
