package authz

import (
	"context"
	"slices"
	"strings"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
)

// Node gives nodes (users system:node:<name> in system:nodes)
// what upstream's Node authorizer gives the kubelet, as a subset: its own
// Node and Lease, pods (reading all, writing status and deleting only those
// bound to it), events, CSRs, services and endpoints, and the secrets,
// configmaps and service accounts (tokens) of pods bound to it. What it
// does not allow, and every other user, goes to Next (RBAC).
type Node struct {
	Next  endpoints.Authorizer
	Graph NodeGraph
}

var _ endpoints.Authorizer = Node{}

// NodeGraph answers which pods are bound to which node.
type NodeGraph interface {
	// PodNode is the node pod namespace/name is bound to ("" for none).
	PodNode(ctx context.Context, namespace, name string) (string, error)
	// PodsOn lists the pods of namespace bound to node.
	PodsOn(ctx context.Context, namespace, node string) ([]*corev1.Pod, error)
}

// nodeName is the node a user is, if it is one.
func nodeName(user string, groups []string) (string, bool) {
	name, ok := strings.CutPrefix(user, authn.NodeUserPrefix)
	if !ok || name == "" || !slices.Contains(groups, authn.GroupNodes) {
		return "", false
	}
	return name, true
}

// Authorize implements Authorizer.
func (n Node) Authorize(ctx context.Context, attrs authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
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
	return n.Next.Authorize(ctx, attrs)
}

// RulesFor implements Authorizer with Next's rules: the node rules depend
// on the objects named, which a rules review cannot list.
func (n Node) RulesFor(ctx context.Context, user authenticationv1.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus {
	return n.Next.RulesFor(ctx, user, namespace)
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch"}
)

// allows decides one resource request of node.
func (n Node) allows(ctx context.Context, node string, ra *authorizationv1.ResourceAttributes) (bool, error) {
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
func (n Node) podAllows(ctx context.Context, node string, ra *authorizationv1.ResourceAttributes) (bool, error) {
	switch {
	case ra.Subresource == "" && slices.Contains(readVerbs, ra.Verb):
		return true, nil
	case ra.Subresource == "" && ra.Verb == "create":
		return true, nil
	case ra.Subresource == "" && ra.Verb == "delete",
		ra.Subresource == "status" && slices.Contains(append(writeVerbs, "get"), ra.Verb),
		ra.Subresource == "eviction" && ra.Verb == "create":
		bound, err := n.Graph.PodNode(ctx, ra.Namespace, ra.Name)
		return bound == node && err == nil, nil
	}
	return false, nil
}

// referenced reports whether a pod bound to node uses the named secret,
// configmap or service account.
func (n Node) referenced(ctx context.Context, node, namespace, resource, name string) (bool, error) {
	pods, err := n.Graph.PodsOn(ctx, namespace, node)
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
