package build

import (
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batchlet/batchlet/apiserver/registry"
)

// resource describes one served REST resource as the routes need it.
type resource struct {
	gvk          schema.GroupVersionKind
	plural       string
	namespaced   bool
	obj, list    interface{}
	verbs        []string
	subresources []registry.Subresource
	// deleteReturnsObject: DELETE answers with the object (graceful
	// deletion, finalization) instead of a Status.
	deleteReturnsObject bool
	// noStrategicMerge: only JSON patch and merge patch (like upstream custom resources).
	noStrategicMerge bool
	// createOnly: a review, only ever created (POST to the collection).
	createOnly bool
}

// serves says whether the main resource answers verb.
func (r resource) serves(verb string) bool { return slices.Contains(r.verbs, verb) }

// groupVersion is one served API group version and its resources.
type groupVersion struct {
	gv        schema.GroupVersion
	resources []resource
}

// root is the URL path prefix of the group version ("/api/v1", "/apis/batch/v1").
func (g groupVersion) root() string {
	if g.gv.Group == "" {
		return "/api/" + g.gv.Version
	}
	return "/apis/" + g.gv.Group + "/" + g.gv.Version
}

func core(kind string) schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind(kind)
}

// served lists the group versions and resources batchlet's API server
// serves, in discovery order, from the registry discovery reads too.
func served() []groupVersion {
	var out []groupVersion
	index := map[schema.GroupVersion]int{}
	for _, r := range registry.All() {
		gv := r.GroupVersion()
		i, found := index[gv]
		if !found {
			i = len(out)
			index[gv] = i
			out = append(out, groupVersion{gv: gv})
		}
		out[i].resources = append(out[i].resources, fromRegistry(r))
	}
	return out
}

func fromRegistry(r *registry.Resource) resource {
	res := resource{
		gvk: r.GVK(), plural: r.GVR.Resource, namespaced: r.Namespaced, obj: r.New(), verbs: r.ServedVerbs(),
		deleteReturnsObject: r.GracefulDelete != nil || r.HasSubresource("finalize"),
		noStrategicMerge:    r.NoStrategicMerge || r.CustomResource,
		createOnly:          r.CreateOnly,
	}
	if r.NewList != nil && !r.CreateOnly { // a review has no list kind
		res.list = r.NewList()
	}
	for _, sub := range r.Subresources {
		res.subresources = append(res.subresources, r.Subresource(sub))
	}
	return res
}

// Models used by routes that are not the resources themselves.
var (
	modelStatus        = &metav1.Status{}
	modelDeleteOptions = &metav1.DeleteOptions{}
	modelPatch         = &metav1.Patch{}
	modelWatchEvent    = &metav1.WatchEvent{}
	modelResourceList  = &metav1.APIResourceList{}
)

// subresourceModels are the objects of the subresource kinds that are not
// their parent's kind. A subresource of another kind must be listed here.
var subresourceModels = map[schema.GroupVersionKind]interface{}{
	core("Binding"): &corev1.Binding{},
	policyv1.SchemeGroupVersion.WithKind("Eviction"):             &policyv1.Eviction{},
	authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"): &authenticationv1.TokenRequest{},
	core("PodExecOptions"):                                       &corev1.PodExecOptions{},
	core("PodAttachOptions"):                                     &corev1.PodAttachOptions{},
	core("NodeProxyOptions"):                                     &corev1.NodeProxyOptions{},
}

// subresourceModel is the object a subresource's requests and answers carry.
func subresourceModel(r resource, sub registry.Subresource) (interface{}, error) {
	if sub.GVK == r.gvk {
		return r.obj, nil
	}
	model, found := subresourceModels[sub.GVK]
	if !found {
		return nil, fmt.Errorf("no model for %s/%s of kind %s", r.plural, sub.Name, sub.GVK)
	}
	return model, nil
}
