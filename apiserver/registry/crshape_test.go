package registry

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batchlet/batchlet/install"
)

// installedCRD is install's CRD name.
func installedCRD(t testing.TB, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	objs, err := install.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetName() != name {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			t.Fatal(err)
		}
		crd.Status.AcceptedNames = crd.Spec.Names
		return crd
	}
	t.Fatalf("no CRD %s in install", name)
	return nil
}

// A ContainerResult's create validation answers exactly as apiextensions'
// strategy, errors included, whether or not the object is clean.
func TestCustomResourceValidateMatchesStrategy(t *testing.T) {
	crd := installedCRD(t, "containerresults.results.batchlet.dev")
	v := &crd.Spec.Versions[0]
	res, err := customResource(crd, v)
	if err != nil {
		t.Fatal(err)
	}
	props, structural, err := versionSchema(crd, v)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	upstream := customresource.NewStrategy(nil, true, res.GVK(), full, nil, structural, nil, nil, nil)
	meta := func(change func(m map[string]interface{})) *unstructured.Unstructured {
		o := resultObject(validSpec())
		change(o["metadata"].(map[string]interface{}))
		return &unstructured.Unstructured{Object: o}
	}
	tests := []struct {
		name      string
		obj       *unstructured.Unstructured
		wantClean bool
	}{
		{"valid", &unstructured.Unstructured{Object: resultObject(validSpec())}, true},
		{"owner and finalizer", meta(func(m map[string]interface{}) {
			m["ownerReferences"] = []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": true}}
			m["finalizers"] = []interface{}{"batchlet.dev/x"}
		}), true},
		{"bad label value", meta(func(m map[string]interface{}) { m["labels"] = map[string]interface{}{"a": "-b"} }), false},
		{"bad label key", meta(func(m map[string]interface{}) { m["labels"] = map[string]interface{}{"a/b/c": "b"} }), false},
		{"bad annotation key", meta(func(m map[string]interface{}) { m["annotations"] = map[string]interface{}{"-x": "b"} }), false},
		{"uppercase name", meta(func(m map[string]interface{}) { m["name"] = "P.c.0" }), false},
		{"no namespace", meta(func(m map[string]interface{}) { delete(m, "namespace") }), false},
		{"no name", meta(func(m map[string]interface{}) { delete(m, "name") }), false},
		{"two controllers", meta(func(m map[string]interface{}) {
			ref := map[string]interface{}{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": true}
			m["ownerReferences"] = []interface{}{ref, ref}
		}), false},
		{"wrong kind", func() *unstructured.Unstructured {
			o := resultObject(validSpec())
			o["kind"] = "Other"
			return &unstructured.Unstructured{Object: o}
		}(), false},
		{"wrong apiVersion", func() *unstructured.Unstructured {
			o := resultObject(validSpec())
			o["apiVersion"] = "results.batchlet.dev/v2"
			return &unstructured.Unstructured{Object: o}
		}(), false},
		{"spec type error", &unstructured.Unstructured{Object: withSpec(func(s map[string]interface{}) { s["exitCode"] = "0" })}, false},
		{"bad meta and spec", func() *unstructured.Unstructured {
			u := meta(func(m map[string]interface{}) { m["labels"] = map[string]interface{}{"a": "-b"} })
			u.Object["spec"].(map[string]interface{})["attempt"] = "x"
			return u
		}(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if clean := crCreateClean(tt.obj, res.GVK(), true, compileFastSchema(props)); clean != tt.wantClean {
				t.Fatalf("crCreateClean = %v, want %v", clean, tt.wantClean)
			}
			want := upstream.Validate(context.Background(), tt.obj.DeepCopy())
			got := res.Validate(tt.obj.DeepCopy())
			if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
				t.Fatalf("Validate = %v, strategy %v", got, want)
			}
			if tt.wantClean != (len(want) == 0) {
				t.Fatalf("strategy found %v", want)
			}
		})
	}
}

// featureSchema embeds an object, declares defaults and a nullable field:
// every pass the shape could skip has something to do.
func featureSchema(t *testing.T) (*apiextensions.JSONSchemaProps, *structuralschema.Structural) {
	t.Helper()
	str := apiextensions.JSONSchemaProps{Type: "string"}
	var fast apiextensions.JSON = "fast"
	props := &apiextensions.JSONSchemaProps{Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{
		"apiVersion": str, "kind": str, "metadata": {Type: "object"},
		"spec": {Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{
			"mode":     {Type: "string", Default: &fast},
			"nullable": {Type: "string", Nullable: true},
			"plain":    str,
			"items":    {Type: "array", Items: &apiextensions.JSONSchemaPropsOrArray{Schema: &str}},
			"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr(true)},
		}},
	}}
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	return props, s
}

// Pruning and defaulting with the shape's skips leave every object and
// unknown-field list as upstream's full passes do.
func TestPruneAndDefaultMatchUpstream(t *testing.T) {
	result := installedCRD(t, "containerresults.results.batchlet.dev")
	resultProps, resultSchema, err := versionSchema(result, &result.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	resultFast := compileFastSchema(resultProps)
	if resultFast == nil {
		t.Fatal("the ContainerResult schema has no fast check")
	}
	featureProps, features := featureSchema(t)
	if compileFastSchema(featureProps) != nil {
		t.Fatal("the feature schema has a fast check")
	}
	if sh := shapeOf(features); !sh.embedded || !sh.defaults {
		t.Fatalf("shapeOf(feature schema) = %+v", sh)
	}
	if sh := shapeOf(resultSchema); sh.embedded || sh.defaults {
		t.Fatalf("shapeOf(ContainerResult) = %+v", sh)
	}
	embedded := map[string]interface{}{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]interface{}{"name": "x", "bogus": "y", "creationTimestamp": nil}}
	tests := []struct {
		name   string
		schema *structuralschema.Structural
		fast   *fastSchema
		obj    map[string]interface{}
		// wantPruned: upstream's pruning deletes something.
		wantPruned bool
	}{
		{"result", resultSchema, resultFast, resultObject(validSpec()), false},
		{"result with metadata field unknown", resultSchema, resultFast, func() map[string]interface{} {
			o := resultObject(validSpec())
			o["metadata"].(map[string]interface{})["bogus"] = "x"
			return o
		}(), false},
		{"result with unknown and null", resultSchema, resultFast, withSpec(func(s map[string]interface{}) { s["extra"] = "x"; s["reason"] = nil }), true},
		{"result with null in unknown", resultSchema, resultFast, withSpec(func(s map[string]interface{}) { s["extra"] = map[string]interface{}{"a": nil} }), true},
		{"result with unknown root field", resultSchema, resultFast, func() map[string]interface{} {
			o := resultObject(validSpec())
			o["status"] = map[string]interface{}{}
			return o
		}(), true},
		{"result with empty object as string", resultSchema, resultFast, withSpec(func(s map[string]interface{}) { s["reason"] = map[string]interface{}{} }), false},
		{"result with object as string", resultSchema, resultFast, withSpec(func(s map[string]interface{}) { s["reason"] = map[string]interface{}{"a": "b"} }), true},
		{"result with list of scalars", resultSchema, resultFast, withSpec(func(s map[string]interface{}) { s["reason"] = []interface{}{"a", int64(1), []interface{}{}} }), false},
		{"result with list of objects", resultSchema, resultFast, withSpec(func(s map[string]interface{}) {
			s["reason"] = []interface{}{[]interface{}{map[string]interface{}{"a": "b"}}}
		}), true},
		{"result spec not an object", resultSchema, resultFast, func() map[string]interface{} {
			o := resultObject(validSpec())
			o["spec"] = "x"
			return o
		}(), false},
		{"features empty spec", features, nil, map[string]interface{}{"apiVersion": "a/v1", "kind": "K", "spec": map[string]interface{}{}}, false},
		{"features nulls", features, nil, map[string]interface{}{"apiVersion": "a/v1", "kind": "K", "spec": map[string]interface{}{
			"mode": nil, "nullable": nil, "plain": nil, "items": []interface{}{"a", nil}}}, false},
		{"features embedded", features, nil, map[string]interface{}{"apiVersion": "a/v1", "kind": "K", "spec": map[string]interface{}{
			"template": embedded, "unknown": int64(1)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fast != nil && tt.fast.prunesNothing(tt.obj) == tt.wantPruned {
				t.Fatalf("prunesNothing = %v, want %v", tt.fast.prunesNothing(tt.obj), !tt.wantPruned)
			}
			pruned := runtime.DeepCopyJSON(tt.obj)
			structuralpruning.Prune(pruned, tt.schema, true)
			if reflect.DeepEqual(pruned, tt.obj) == tt.wantPruned {
				t.Fatalf("upstream pruning changed the object: %v, test expects %v", !tt.wantPruned, tt.wantPruned)
			}
			want := runtime.DeepCopyJSON(tt.obj)
			wantPaths := upstreamPrune(want, tt.schema)
			structuraldefaulting.Default(want, tt.schema)
			got := runtime.DeepCopyJSON(tt.obj)
			sh := shapeOf(tt.schema)
			gotPaths := pruneCustomResource(got, tt.schema, sh, tt.fast)
			defaultCustomResource(got, tt.schema, sh)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("object = %v, upstream %v", got, want)
			}
			if !reflect.DeepEqual(gotPaths, wantPaths) {
				t.Fatalf("unknown fields = %q, upstream %q", gotPaths, wantPaths)
			}
		})
	}
}

// upstreamPrune is the decoder's pruning with every pass run.
func upstreamPrune(obj map[string]interface{}, s *structuralschema.Structural) []string {
	paths := structuralpruning.PruneWithOptions(obj, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
	if err, more := schemaobjectmeta.CoerceWithOptions(nil, obj, s, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); err == nil {
		paths = append(paths, more...)
	}
	return paths
}

func TestContainsNull(t *testing.T) {
	tests := []struct {
		v    interface{}
		want bool
	}{
		{nil, true},
		{"x", false},
		{map[string]interface{}{"a": int64(1), "b": []interface{}{"c"}}, false},
		{map[string]interface{}{"a": map[string]interface{}{"b": nil}}, true},
		{[]interface{}{"a", []interface{}{nil}}, true},
	}
	for _, tt := range tests {
		if got := containsNull(tt.v); got != tt.want {
			t.Errorf("containsNull(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
