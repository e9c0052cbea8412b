package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// nodeAuthorizer gives nodes (users system:node:<name> in system:nodes)
// what upstream's Node authorizer gives the kubelet, as a subset: its own
// Node and Lease, pods (reading all, writing status and deleting only those
// bound to it), events, CSRs, services and endpoints, and the secrets,
// configmaps and service accounts (tokens) of pods bound to it. What it
// does not allow, and every other user, goes to next (RBAC).
type nodeAuthorizer struct {
	next  endpoints.Authorizer
	graph nodeGraph
}

// nodeGraph answers which pods are bound to which node.
type nodeGraph interface {
	// podNode is the node pod namespace/name is bound to ("" for none).
	podNode(ctx context.Context, namespace, name string) (string, error)
	// podsOn lists the pods of namespace bound to node.
	podsOn(ctx context.Context, namespace, node string) ([]*corev1.Pod, error)
}

// nodeName is the node a user is, if it is one.
func nodeName(user string, groups []string) (string, bool) {
	name, ok := strings.CutPrefix(user, NodeUserPrefix)
	if !ok || name == "" || !slices.Contains(groups, GroupNodes) {
		return "", false
	}
	return name, true
}

// Authorize implements Authorizer.
func (n nodeAuthorizer) Authorize(ctx context.Context, attrs authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	node, ok := nodeName(attrs.User, attrs.Groups)
	if ok && attrs.ResourceAttributes != nil {
		allowed, err := n.allows(ctx, node, attrs.ResourceAttributes)
		if err != nil {
			return false, "", err
		}
		if allowed {
			return true, "", nil
		}
	}
	return n.next.Authorize(ctx, attrs)
}

// RulesFor implements Authorizer with next's rules: the node rules depend
// on the objects named, which a rules review cannot list.
func (n nodeAuthorizer) RulesFor(ctx context.Context, user authenticationv1.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus {
	return n.next.RulesFor(ctx, user, namespace)
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch"}
)

// allows decides one resource request of node.
func (n nodeAuthorizer) allows(ctx context.Context, node string, ra *authorizationv1.ResourceAttributes) (bool, error) {
	verb := ra.Verb
	switch ra.Group + "/" + ra.Resource {
	case "/nodes":
		return slices.Contains(readVerbs, verb) || ra.Name == node || (verb == "create" && ra.Name == ""), nil
	case "/pods":
		return n.podAllows(ctx, node, ra)
	case "/events", "events.k8s.io/events":
		return slices.Contains(writeVerbs, verb) || slices.Contains(readVerbs, verb), nil
	case "coordination.k8s.io/leases":
		return ra.Namespace == corev1.NamespaceNodeLease && (ra.Name == node || (verb == "create" && ra.Name == "")), nil
	case "/services", "/endpoints", "discovery.k8s.io/endpointslices", "/namespaces":
		return slices.Contains(readVerbs, verb), nil
	case "certificates.k8s.io/certificatesigningrequests":
		return ra.Subresource == "" && (verb == "create" || slices.Contains(readVerbs, verb)), nil
	case "results.batchlet.dev/containerresults":
		return slices.Contains(writeVerbs, verb) || slices.Contains(readVerbs, verb), nil
	case "/secrets", "/configmaps":
		if verb != "get" || ra.Name == "" {
			return false, nil
		}
		return n.referenced(ctx, node, ra.Namespace, ra.Resource, ra.Name)
	case "/serviceaccounts":
		if ra.Name == "" || !((ra.Subresource == "" && verb == "get") || (ra.Subresource == "token" && verb == "create")) {
			return false, nil
		}
		return n.referenced(ctx, node, ra.Namespace, ra.Resource, ra.Name)
	}
	return false, nil
}

// podAllows: nodes read every pod (the agent watches its own, its peers
// those sharing a subdomain), create mirror pods, and write the status of,
// evict or delete only pods bound to them.
func (n nodeAuthorizer) podAllows(ctx context.Context, node string, ra *authorizationv1.ResourceAttributes) (bool, error) {
	switch {
	case ra.Subresource == "" && slices.Contains(readVerbs, ra.Verb):
		return true, nil
	case ra.Subresource == "" && ra.Verb == "create":
		return true, nil
	case ra.Subresource == "" && ra.Verb == "delete",
		ra.Subresource == "status" && slices.Contains(append(writeVerbs, "get"), ra.Verb),
		ra.Subresource == "eviction" && ra.Verb == "create":
		bound, err := n.graph.podNode(ctx, ra.Namespace, ra.Name)
		return bound == node && err == nil, nil
	}
	return false, nil
}

// referenced reports whether a pod bound to node uses the named secret,
// configmap or service account.
func (n nodeAuthorizer) referenced(ctx context.Context, node, namespace, resource, name string) (bool, error) {
	pods, err := n.graph.podsOn(ctx, namespace, node)
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		if slices.Contains(podReferences(p)[resource], name) {
			return true, nil
		}
	}
	return false, nil
}

// podReferences lists the secrets, configmaps and service account a pod
// uses, by resource.
func podReferences(pod *corev1.Pod) map[string][]string {
	refs := map[string][]string{"serviceaccounts": {pod.Spec.ServiceAccountName}}
	add := func(resource, name string) {
		if name != "" {
			refs[resource] = append(refs[resource], name)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		volumeReferences(v, add)
	}
	var containers []corev1.Container
	containers = append(containers, pod.Spec.InitContainers...)
	containers = append(containers, pod.Spec.Containers...)
	for _, c := range containers {
		containerReferences(c.EnvFrom, c.Env, add)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		containerReferences(c.EnvFrom, c.Env, add)
	}
	return refs
}

func volumeReferences(v corev1.Volume, add func(resource, name string)) {
	if v.Secret != nil {
		add("secrets", v.Secret.SecretName)
	}
	if v.ConfigMap != nil {
		add("configmaps", v.ConfigMap.Name)
	}
	if v.Projected == nil {
		return
	}
	for _, src := range v.Projected.Sources {
		if src.Secret != nil {
			add("secrets", src.Secret.Name)
		}
		if src.ConfigMap != nil {
			add("configmaps", src.ConfigMap.Name)
		}
	}
}

func containerReferences(envFrom []corev1.EnvFromSource, env []corev1.EnvVar, add func(resource, name string)) {
	for _, e := range envFrom {
		if e.SecretRef != nil {
			add("secrets", e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			add("configmaps", e.ConfigMapRef.Name)
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if e.ValueFrom.SecretKeyRef != nil {
			add("secrets", e.ValueFrom.SecretKeyRef.Name)
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			add("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)
		}
	}
}

// storeGraph answers nodeGraph from the server's store.
type storeGraph struct{ s *Server }

func (g storeGraph) podNode(ctx context.Context, namespace, name string) (string, error) {
	obj, _, err := g.s.objects.GetShared(ctx, g.s.resource("", "v1", "pods"), namespace, name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return obj.(*corev1.Pod).Spec.NodeName, nil
}

func (g storeGraph) podsOn(ctx context.Context, namespace, node string) ([]*corev1.Pod, error) {
	res := g.s.resource("", "v1", "pods")
	onNode := genericstore.NewFilter(res, labels.Everything(), fields.OneTermEqualSelector("spec.nodeName", node))
	lr, err := g.s.objects.List(ctx, res, namespace, onNode, 0, "", "", "")
	if err != nil {
		return nil, fmt.Errorf("list pods of node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, 0, len(lr.Items))
	for _, o := range lr.Items {
		out = append(out, o.(*corev1.Pod))
	}
	return out, nil
}
