package registry

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CustomResources builds the served resources of an established CRD, one
// per served version, from its accepted names. Objects are unstructured;
// pruning, defaulting, validation, the status subresource and the table
// columns are apiextensions-apiserver's own (structural schema, strategy,
// table convertor). Versions share one store: with conversion strategy
// None an object read through another version only changes apiVersion.
func CustomResources(crd *apiextensionsv1.CustomResourceDefinition) ([]*Resource, error) {
	var out []*Resource
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		r, err := customResource(crd, v)
		if err != nil {
			return nil, fmt.Errorf("serve %s version %s: %w", crd.Name, v.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func customResource(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*Resource, error) {
	names := crd.Status.AcceptedNames
	gvr := apiextensionsv1.SchemeGroupVersion.WithResource(names.Plural)
	gvr.Group, gvr.Version = crd.Spec.Group, v.Name
	kind := gvr.GroupVersion().WithKind(names.Kind)
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped

	schemaProps, structural, err := versionSchema(crd, v)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(schemaProps)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	fast := compileFastSchema(schemaProps)
	validator = withFastSchema(schemaProps, validator)
	var status *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var subresources []string
	if v.Subresources != nil && v.Subresources.Status != nil {
		status = &apiextensions.CustomResourceSubresourceStatus{}
		subresources = append(subresources, "status")
		if schemaProps != nil {
			if st, ok := schemaProps.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, fmt.Errorf("status schema validator: %w", err)
				}
				statusValidator = withFastSchema(&st, statusValidator)
			}
		}
	}
	strategy := customresource.NewStrategy(nil, namespaced, kind, validator, statusValidator, structural, status, nil, v.SelectableFields)
	statusStrategy := customresource.NewStatusStrategy(strategy)
	ctx := context.Background()

	table, err := tableconvertor.New(printerColumns(v))
	if err != nil {
		return nil, fmt.Errorf("printer columns: %w", err)
	}
	head, err := table.ConvertToTable(ctx, &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil, fmt.Errorf("printer columns: %w", err)
	}

	r := &Resource{
		GVR: gvr, Kind: names.Kind, Singular: names.Singular, Namespaced: namespaced,
		ShortNames: names.ShortNames, Categories: names.Categories, Subresources: subresources,
		CustomResource: true, Definition: crd.Name,
		New:     func() runtime.Object { return &unstructured.Unstructured{} },
		NewList: func() runtime.Object { return &unstructured.UnstructuredList{} },
		PrepareForCreate: func(obj runtime.Object) {
			strategy.PrepareForCreate(ctx, obj)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			strategy.PrepareForUpdate(ctx, obj, old)
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			statusStrategy.PrepareForUpdate(ctx, obj, old)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			if crCreateClean(obj, kind, namespaced, fast) {
				return nil
			}
			return strategy.Validate(ctx, obj)
		},
		ValidateChecksMeta:       true,
		ValidateUpdateChecksMeta: true,
		ValidateUpdate:           func(obj, old runtime.Object) field.ErrorList { return strategy.ValidateUpdate(ctx, obj, old) },
		ValidateStatusUpdate:     func(obj, old runtime.Object) field.ErrorList { return statusStrategy.ValidateUpdate(ctx, obj, old) },
		// metadata.name, metadata.namespace and the version's selectableFields.
		Fields: func(obj runtime.Object) fields.Set {
			_, set, err := strategy.GetAttrs(obj)
			if err != nil {
				return fields.Set{}
			}
			return set
		},
		Columns: head.ColumnDefinitions,
		Row: func(obj runtime.Object, _ time.Time) metav1.TableRow {
			t, err := table.ConvertToTable(ctx, obj, nil)
			if err != nil || len(t.Rows) != 1 {
				return metav1.TableRow{Cells: make([]interface{}, len(head.ColumnDefinitions))}
			}
			return metav1.TableRow{Cells: t.Rows[0].Cells}
		},
	}
	if structural != nil {
		shape := shapeOf(structural)
		r.DefaultRaw = func(obj map[string]interface{}) { defaultCustomResource(obj, structural, shape) }
		if !crd.Spec.PreserveUnknownFields {
			r.PruneRaw = func(obj map[string]interface{}) []string { return pruneCustomResource(obj, structural, shape, fast) }
		}
	}
	return r, nil
}

// versionSchema is the version's schema in the internal form the
// validator takes, and its structural form with defaults pruned (as
// upstream serves it).
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*apiextensions.JSONSchemaProps, *structuralschema.Structural, error) {
	val := v.Schema
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("convert schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		if crd.Spec.PreserveUnknownFields {
			return internal.OpenAPIV3Schema, nil, nil
		}
		return nil, nil, fmt.Errorf("structural schema: %w", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, nil, fmt.Errorf("prune defaults: %w", err)
	}
	return internal.OpenAPIV3Schema, s, nil
}

// printerColumns are the version's additionalPrinterColumns, or upstream's
// default Age column when it names none.
func printerColumns(v *apiextensionsv1.CustomResourceDefinitionVersion) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(v.AdditionalPrinterColumns) > 0 {
		return v.AdditionalPrinterColumns
	}
	return []apiextensionsv1.CustomResourceColumnDefinition{{
		Name: "Age", Type: "date", Description: objectMetaDoc["creationTimestamp"], JSONPath: ".metadata.creationTimestamp",
	}}
}
