package registry

import (
	"github.com/batchlet/batchlet/apiserver/validation"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A custom resource's create runs apiextensions' passes over the whole
// object whatever its schema declares: coercing embedded objects' metadata,
// dropping disallowed nulls, applying defaults, and the strategy's
// embedded-object, list-set/map and CEL checks. Most of them can only act
// on a schema feature (x-kubernetes-embedded-resource, a default, a list
// type, a rule); schemaShape says, once per schema, which features it has,
// so the passes that cannot change or refuse anything are skipped. Every
// pass that can still act runs as upstream's, so objects and errors stay
// upstream's.

// schemaShape is what a structural schema declares anywhere in its tree.
type schemaShape struct {
	embedded bool // x-kubernetes-embedded-resource
	defaults bool // a default value
}

// shapeOf walks s (properties, items, additionalProperties: the nodes the
// passes walk).
func shapeOf(s *structuralschema.Structural) schemaShape {
	var sh schemaShape
	var walk func(s *structuralschema.Structural)
	walk = func(s *structuralschema.Structural) {
		if s == nil {
			return
		}
		sh.embedded = sh.embedded || s.XEmbeddedResource
		sh.defaults = sh.defaults || s.Default.Object != nil
		for k := range s.Properties {
			p := s.Properties[k]
			walk(&p)
		}
		walk(s.Items)
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Structural)
		}
	}
	walk(s)
	return sh
}

// pruneCustomResource is what upstream's decoder does to a custom resource:
// drop the fields the schema does not declare (returning their paths), the
// nulls it does not allow, and coerce the metadata of embedded objects.
// Pruning is skipped when fast (the schema's fast check, if it has one)
// finds every field declared, dropping nulls when no null is left (it
// deletes only nulls), coercing when the schema embeds no object (it acts
// only on those).
func pruneCustomResource(obj map[string]interface{}, s *structuralschema.Structural, sh schemaShape, fast *fastSchema) []string {
	var paths []string
	if fast == nil || !fast.prunesNothing(obj) {
		paths = structuralpruning.PruneWithOptions(obj, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	}
	if containsNull(obj) {
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
	}
	if !sh.embedded {
		return paths
	}
	if err, more := schemaobjectmeta.CoerceWithOptions(nil, obj, s, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); err == nil {
		paths = append(paths, more...)
	}
	return paths
}

// prunesNothing says that upstream's pruning of obj, a resource's root,
// against the schema f was compiled from deletes nothing: at the root it
// keeps apiVersion, kind and metadata, below every key must be a declared
// property (f's schemas declare no additionalProperties, items or
// preserve-unknown-fields, so pruning keeps nothing else).
func (f *fastSchema) prunesNothing(obj map[string]interface{}) bool {
	for k, v := range obj {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		p, ok := f.properties[k]
		if !ok || !p.keepsAll(v) {
			return false
		}
	}
	return true
}

// keepsAll says that pruning v against f's schema deletes nothing.
func (f *fastSchema) keepsAll(v interface{}) bool {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			p, ok := f.properties[k] // none declared: every key goes
			if !ok || !p.keepsAll(e) {
				return false
			}
		}
	case []interface{}:
		return keepsAllUndeclared(v)
	}
	return true
}

// keepsAllUndeclared says that pruning v against no schema deletes
// nothing: it holds no object with a key.
func keepsAllUndeclared(v interface{}) bool {
	switch v := v.(type) {
	case map[string]interface{}:
		return len(v) == 0
	case []interface{}:
		for _, e := range v {
			if !keepsAllUndeclared(e) {
				return false
			}
		}
	}
	return true
}

// defaultCustomResource applies the schema's defaults; with none declared
// upstream's pass changes nothing (it rewrites a null only with a default).
func defaultCustomResource(obj map[string]interface{}, s *structuralschema.Structural, sh schemaShape) {
	if sh.defaults {
		structuraldefaulting.Default(obj, s)
	}
}

// containsNull says whether a JSON value holds a null anywhere.
func containsNull(v interface{}) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		for _, e := range v {
			if containsNull(e) {
				return true
			}
		}
	case []interface{}:
		for _, e := range v {
			if containsNull(e) {
				return true
			}
		}
	}
	return false
}

// crCreateClean says that apiextensions' customResourceStrategy.Validate
// finds no error in obj, for a schema fastSchema checks: such a schema
// has no embedded objects, list types, rules or scale, so the strategy's
// checks are the type meta, the object meta and the schema's, each asked
// here through a predicate exact for acceptance. When it says false the
// strategy runs and gives its own errors.
func crCreateClean(obj runtime.Object, kind schema.GroupVersionKind, namespaced bool, fast *fastSchema) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || fast == nil {
		return false
	}
	return u.GetKind() == kind.Kind && u.GetAPIVersion() == kind.Group+"/"+kind.Version &&
		validation.ObjectMetaClean(u, namespaced, true) && fast.conforms(u.Object)
}
