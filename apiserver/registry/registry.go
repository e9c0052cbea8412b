// Package registry describes every resource the API server serves: its
// names for discovery, how to build its Go types, and the per-resource
// strategy (defaulting, validation, status handling, field-selector
// attributes, table columns). Adding a resource is one small file here.
package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource is one served resource and its strategy. Nil funcs are no-ops.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	// Subresources lists served subresources ("status", "binding", ...).
	Subresources []string
	// Verbs overrides the default verb list in discovery.
	Verbs []string

	New     func() runtime.Object
	NewList func() runtime.Object

	// DefaultRaw applies schema defaults to the raw JSON object before it
	// is decoded into the Go type (CRD structural defaults).
	DefaultRaw func(obj map[string]interface{})
	// PruneRaw drops the fields of the raw JSON object its schema does not
	// declare, before DefaultRaw, and returns their paths ("spec.foo") for
	// fieldValidation (custom resources).
	PruneRaw func(obj map[string]interface{}) []string
	// PrepareForCreate defaults a new object (UID and metadata already set).
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate copies what a main-resource update may not change
	// (usually status) from old to obj and applies update-time defaults.
	PrepareForUpdate func(obj, old runtime.Object)
	// PrepareForUpdateCopiesOnWrite: PrepareForUpdate writes nothing into
	// memory obj shares with old, so a main-resource patch may build obj
	// from the shared current object (its untouched parts shared).
	PrepareForUpdateCopiesOnWrite bool
	// PrepareForStatusUpdate copies everything except status from old.
	PrepareForStatusUpdate func(obj, old runtime.Object)
	Validate               func(obj runtime.Object) field.ErrorList
	// ValidateChecksMeta: Validate begins with the object-meta checks create
	// runs first (validation.ValidateObjectMeta with this resource's name
	// rule), so a create it passes need not run them again.
	ValidateChecksMeta bool
	// ValidateUpdateChecksMeta: ValidateUpdate (and ValidateStatusUpdate)
	// make the object-meta update checks themselves.
	ValidateUpdateChecksMeta bool
	ValidateUpdate           func(obj, old runtime.Object) field.ErrorList
	// ValidateUpdateSpecKnown, when set, replaces ValidateUpdate for a
	// server that has already compared the specs (HasSpec).
	ValidateUpdateSpecKnown func(obj, old runtime.Object, specEqual bool) field.ErrorList
	ValidateStatusUpdate    func(obj, old runtime.Object) field.ErrorList
	// Fields returns the field-selector attributes beyond metadata.name and
	// metadata.namespace, which are always supported.
	Fields func(obj runtime.Object) fields.Set
	// Table describes the columns and builds one row's cells.
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object, now time.Time) metav1.TableRow
	// PrepareForDelete edits the object a delete request is about to mark
	// or remove (a CRD gains its cleanup finalizer).
	PrepareForDelete func(obj runtime.Object)
	// OrphanByDefault: deletes without propagationPolicy orphan dependents.
	OrphanByDefault bool
	// GracefulDelete returns the grace period to apply (and whether the
	// delete is graceful) for a delete request asking for requested seconds
	// (nil = unset).
	GracefulDelete func(obj runtime.Object, requested *int64) (int64, bool)
	// HasSpec: generation starts at 1 and is bumped when the spec changes
	// (others have no generation, as upstream).
	HasSpec bool
	// NameIsLabel: names must be DNS-1123 labels instead of subdomains.
	NameIsLabel bool
	// CreateOnly: a review (SelfSubjectAccessReview...): create answers
	// with the object and its computed status, and nothing is stored.
	CreateOnly bool

	// CustomResource: served from a CustomResourceDefinition (Definition,
	// its name): unstructured objects, no strategic merge patch, lists keep
	// each item's apiVersion and kind.
	CustomResource bool
	Definition     string
	// NoStrategicMerge: strategic merge patches are refused, as for the
	// upstream CRD the resource mirrors (JobSets); custom resources never
	// take them.
	NoStrategicMerge bool

	// StorageGVK, when set, says the resource is a view of another kind's
	// store (events.k8s.io/v1 events over core/v1 events): objects are kept
	// as StorageGVK under StorageResource and converted with the funcs.
	StorageGVK      schema.GroupVersionKind
	StorageResource string
	StorageNew      func() runtime.Object
	ToStorage       func(obj runtime.Object) runtime.Object
	FromStorage     func(obj runtime.Object) runtime.Object
}

// StorageGVR is where the resource's objects are kept.
func (r *Resource) StorageGVR() schema.GroupVersionResource {
	if r.StorageResource != "" {
		return r.StorageGVK.GroupVersion().WithResource(r.StorageResource)
	}
	return r.GVR
}

// GroupVersion of the resource.
func (r *Resource) GroupVersion() schema.GroupVersion { return r.GVR.GroupVersion() }

// GVK of the resource's kind.
func (r *Resource) GVK() schema.GroupVersionKind { return r.GroupVersion().WithKind(r.Kind) }

// GroupResource as used in error messages ("jobs.batch").
func (r *Resource) GroupResource() schema.GroupResource { return r.GVR.GroupResource() }

// HasSubresource says whether sub is served.
func (r *Resource) HasSubresource(sub string) bool {
	for _, s := range r.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

// All returns every built-in served resource, in discovery order. It is the
// one list of what the server serves: discovery reads it at run time and the
// OpenAPI documents are generated from it (apiserver/openapi/internal/build),
// and a test checks the two agree. Custom resources are added at run time.
func All() []*Resource {
	return []*Resource{
		Namespaces(), Pods(), Nodes(), Events(), Services(), Endpoints(), ConfigMaps(), Secrets(), ServiceAccounts(),
		EventsV1(), Leases(), EndpointSlices(), PodDisruptionBudgets(), Jobs(), JobSets(),
		SelfSubjectReviews(), SelfSubjectAccessReviews(), SelfSubjectRulesReviews(),
		ClusterRoleBindings(), ClusterRoles(), RoleBindings(), Roles(), CustomResourceDefinitions(),
		CertificateSigningRequests(),
	}
}

// DefaultVerbs are the verbs of a main resource.
var DefaultVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
