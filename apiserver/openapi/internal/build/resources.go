package build

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Subresources a resource may serve.
const (
	subStatus   = "status"
	subBinding  = "binding"
	subEviction = "eviction"
	subLog      = "log"
	subExec     = "exec"
)

// resource describes one served REST resource.
type resource struct {
	gvk          schema.GroupVersionKind
	plural       string
	namespaced   bool
	obj, list    interface{}
	subresources []string
	// deleteReturnsObject: DELETE answers with the object (graceful deletion) instead of a Status.
	deleteReturnsObject bool
	// noStrategicMerge: only JSON patch and merge patch (like upstream custom resources).
	noStrategicMerge bool
	// noDeleteCollection: the collection cannot be deleted at once.
	noDeleteCollection bool
	// createOnly: a review, only ever created (POST to the collection).
	createOnly bool
}

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

// Served lists the group versions and resources batchlet's API server serves.
func served() []groupVersion {
	return []groupVersion{
		{gv: corev1.SchemeGroupVersion, resources: []resource{
			{gvk: core("Namespace"), plural: "namespaces", obj: &corev1.Namespace{}, list: &corev1.NamespaceList{}, deleteReturnsObject: true, noDeleteCollection: true},
			{gvk: core("Pod"), plural: "pods", namespaced: true, obj: &corev1.Pod{}, list: &corev1.PodList{}, deleteReturnsObject: true,
				subresources: []string{subStatus, subBinding, subEviction, subLog, subExec}},
			{gvk: core("Node"), plural: "nodes", obj: &corev1.Node{}, list: &corev1.NodeList{}, subresources: []string{subStatus}},
			{gvk: core("Event"), plural: "events", namespaced: true, obj: &corev1.Event{}, list: &corev1.EventList{}},
			{gvk: core("Service"), plural: "services", namespaced: true, obj: &corev1.Service{}, list: &corev1.ServiceList{}},
			{gvk: core("Endpoints"), plural: "endpoints", namespaced: true, obj: &corev1.Endpoints{}, list: &corev1.EndpointsList{}}, //lint:ignore SA1019 served as upstream still serves it
			{gvk: core("ConfigMap"), plural: "configmaps", namespaced: true, obj: &corev1.ConfigMap{}, list: &corev1.ConfigMapList{}},
			{gvk: core("Secret"), plural: "secrets", namespaced: true, obj: &corev1.Secret{}, list: &corev1.SecretList{}},
			{gvk: core("ServiceAccount"), plural: "serviceaccounts", namespaced: true, obj: &corev1.ServiceAccount{}, list: &corev1.ServiceAccountList{}},
		}},
		{gv: eventsv1.SchemeGroupVersion, resources: []resource{
			{gvk: eventsv1.SchemeGroupVersion.WithKind("Event"), plural: "events", namespaced: true, obj: &eventsv1.Event{}, list: &eventsv1.EventList{}},
		}},
		{gv: discoveryv1.SchemeGroupVersion, resources: []resource{
			{gvk: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), plural: "endpointslices", namespaced: true, obj: &discoveryv1.EndpointSlice{}, list: &discoveryv1.EndpointSliceList{}},
		}},
		{gv: authenticationv1.SchemeGroupVersion, resources: []resource{
			{gvk: authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), plural: "selfsubjectreviews", obj: &authenticationv1.SelfSubjectReview{}, createOnly: true},
		}},
		{gv: authorizationv1.SchemeGroupVersion, resources: []resource{
			{gvk: authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), plural: "selfsubjectaccessreviews", obj: &authorizationv1.SelfSubjectAccessReview{}, createOnly: true},
			{gvk: authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"), plural: "selfsubjectrulesreviews", obj: &authorizationv1.SelfSubjectRulesReview{}, createOnly: true},
		}},
		{gv: coordinationv1.SchemeGroupVersion, resources: []resource{
			{gvk: coordinationv1.SchemeGroupVersion.WithKind("Lease"), plural: "leases", namespaced: true, obj: &coordinationv1.Lease{}, list: &coordinationv1.LeaseList{}},
		}},
		{gv: batchv1.SchemeGroupVersion, resources: []resource{
			{gvk: batchv1.SchemeGroupVersion.WithKind("Job"), plural: "jobs", namespaced: true, obj: &batchv1.Job{}, list: &batchv1.JobList{}, subresources: []string{subStatus}},
		}},
		{gv: rbacv1.SchemeGroupVersion, resources: []resource{
			{gvk: rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), plural: "clusterrolebindings", obj: &rbacv1.ClusterRoleBinding{}, list: &rbacv1.ClusterRoleBindingList{}},
			{gvk: rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), plural: "clusterroles", obj: &rbacv1.ClusterRole{}, list: &rbacv1.ClusterRoleList{}},
			{gvk: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), plural: "rolebindings", namespaced: true, obj: &rbacv1.RoleBinding{}, list: &rbacv1.RoleBindingList{}},
			{gvk: rbacv1.SchemeGroupVersion.WithKind("Role"), plural: "roles", namespaced: true, obj: &rbacv1.Role{}, list: &rbacv1.RoleList{}},
		}},
		{gv: jobsetv1alpha2.GroupVersion, resources: []resource{
			{gvk: jobsetv1alpha2.GroupVersion.WithKind("JobSet"), plural: "jobsets", namespaced: true, obj: &jobsetv1alpha2.JobSet{}, list: &jobsetv1alpha2.JobSetList{},
				subresources: []string{subStatus}, noStrategicMerge: true},
		}},
	}
}

// Models used by routes that are not the resources themselves.
var (
	modelStatus        = &metav1.Status{}
	modelDeleteOptions = &metav1.DeleteOptions{}
	modelPatch         = &metav1.Patch{}
	modelWatchEvent    = &metav1.WatchEvent{}
	modelResourceList  = &metav1.APIResourceList{}
	modelBinding       = &corev1.Binding{}
	modelEviction      = &policyv1.Eviction{}
)

var (
	gvkBinding        = core("Binding")
	gvkEviction       = policyv1.SchemeGroupVersion.WithKind("Eviction")
	gvkPodExecOptions = core("PodExecOptions")
)
