package install

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// resourceOf maps the kinds Objects renders to their resources and scope.
// The set is closed, so a static table replaces discovery.
var resourceOf = map[schema.GroupKind]struct {
	resource   string
	namespaced bool
}{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: {"customresourcedefinitions", false},
	{Kind: "Namespace"}:      {"namespaces", false},
	{Kind: "ServiceAccount"}: {"serviceaccounts", true},
	{Kind: "Secret"}:         {"secrets", true},
	{Kind: "Service"}:        {"services", true},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   {"mutatingwebhookconfigurations", false},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: {"validatingwebhookconfigurations", false},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       {"clusterroles", false},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                {"clusterrolebindings", false},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                              {"roles", true},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:                       {"rolebindings", true},
	{Group: "apps", Kind: "Deployment"}:                                             {"deployments", true},
}

// Applier creates or replaces objects through a dynamic client. It replaces
// instead of applying client-side because the JobSet CRD (≈ 800 KB) is far
// over the 256 KB limit of kubectl's last-applied annotation.
type Applier struct {
	Client dynamic.Interface
	// Out gets one kubectl-style line per object ("… created").
	Out io.Writer
	// EstablishTimeout bounds the wait for each CRD's Established condition.
	EstablishTimeout time.Duration
}

// Apply creates each object, or replaces it if it exists, in order, and
// waits for every CustomResourceDefinition to be Established.
func (a Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		res, err := a.resourceFor(obj)
		if err != nil {
			return err
		}
		verb, err := createOrReplace(ctx, res, obj)
		if err != nil {
			return fmt.Errorf("applying %s: %w", describe(obj), err)
		}
		fmt.Fprintf(a.Out, "%s %s\n", describe(obj), verb)
	}
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			if err := a.waitEstablished(ctx, obj.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a Applier) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	r, ok := resourceOf[gvk.GroupKind()]
	if !ok {
		return nil, fmt.Errorf("applying %s: kind %s is not one install knows", describe(obj), gvk)
	}
	nri := a.Client.Resource(gvk.GroupVersion().WithResource(r.resource))
	if r.namespaced {
		return nri.Namespace(obj.GetNamespace()), nil
	}
	return nri, nil
}

// createOrReplace returns "created", "configured" or "unchanged" as kubectl
// apply reports them.
func createOrReplace(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured) (string, error) {
	_, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		return "created", nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	current, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	desired := obj.DeepCopy()
	desired.SetResourceVersion(current.GetResourceVersion())
	updated, err := res.Update(ctx, desired, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	if updated.GetResourceVersion() == current.GetResourceVersion() {
		return "unchanged", nil
	}
	return "configured", nil
}

func (a Applier) waitEstablished(ctx context.Context, name string) error {
	timeout := a.EstablishTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	crds := a.Client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Established" {
				last = fmt.Sprint(cm["status"], ": ", cm["message"])
				return cm["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for customresourcedefinition %s to be Established (last: %q): %w", name, last, err)
	}
	return nil
}

// describe names an object as kubectl does: kind.group/name.
func describe(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	return kind + "/" + obj.GetName()
}
