package registry

import (
	"context"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CustomResourceDefinitions is apiextensions.k8s.io/v1
// customresourcedefinitions, with upstream's strategy: status and
// generation owned by the server, storedVersions kept, and validation by
// apiextensions-apiserver itself (through the internal version), so an
// invalid CRD gets upstream's messages. The server's CRD sync sets the
// conditions and serves the custom resources.
func CustomResourceDefinitions() *Resource {
	return &Resource{
		GVR:  apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
		Kind: "CustomResourceDefinition", Singular: "customresourcedefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"}, Subresources: []string{"status"},
		New:     func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		HasSpec: true,
		PrepareForCreate: func(obj runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			addStoredVersion(crd)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			crd.Status = old.(*apiextensionsv1.CustomResourceDefinition).Status
			addStoredVersion(crd)
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*apiextensionsv1.CustomResourceDefinition).Spec = old.(*apiextensionsv1.CustomResourceDefinition).Spec
		},
		PrepareForDelete: func(obj runtime.Object) { markCRDTerminating(obj.(*apiextensionsv1.CustomResourceDefinition)) },
		Validate: func(obj runtime.Object) field.ErrorList {
			in, err := internalCRD(obj)
			if err != nil {
				return field.ErrorList{field.InternalError(field.NewPath(""), err)}
			}
			return append(crdvalidation.ValidateCustomResourceDefinition(context.Background(), in), unsupportedConversion(obj)...)
		},
		ValidateChecksMeta:       true,
		ValidateUpdateChecksMeta: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			in, prev, err := internalCRDPair(obj, old)
			if err != nil {
				return field.ErrorList{field.InternalError(field.NewPath(""), err)}
			}
			return append(crdvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, prev), unsupportedConversion(obj)...)
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			in, prev, err := internalCRDPair(obj, old)
			if err != nil {
				return field.ErrorList{field.InternalError(field.NewPath(""), err)}
			}
			return crdvalidation.ValidateUpdateCustomResourceDefinitionStatus(in, prev)
		},
		Columns: []metav1.TableColumnDefinition{nameColumn(),
			{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]}},
		Row: func(obj runtime.Object, _ time.Time) metav1.TableRow {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			return metav1.TableRow{Cells: []interface{}{crd.Name, crd.CreationTimestamp.UTC().Format(time.RFC3339)}}
		},
	}
}

// unsupportedConversion refuses webhook conversion, which batchlet does not
// call yet, rather than serving versions unconverted.
func unsupportedConversion(obj runtime.Object) field.ErrorList {
	c := obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "conversion", "strategy"), c.Strategy,
		"webhook conversion is not supported yet by batchlet server: use strategy None")}
}

// internalCRD converts a v1 CRD to the internal version the validation
// package takes.
func internalCRD(obj runtime.Object) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(
		obj.(*apiextensionsv1.CustomResourceDefinition), out, nil)
	return out, err
}

// internalCRDPair converts an update's new and old CRD.
func internalCRDPair(obj, old runtime.Object) (in, prev *apiextensions.CustomResourceDefinition, err error) {
	if in, err = internalCRD(obj); err != nil {
		return nil, nil, err
	}
	prev, err = internalCRD(old)
	return in, prev, err
}

// addStoredVersion records the storage version in status.storedVersions,
// as upstream's strategy does on every write.
func addStoredVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !apihelpers.IsStoredVersion(crd, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}

// markCRDTerminating is upstream's delete: the cleanup finalizer keeps the
// CRD until its objects are gone.
func markCRDTerminating(crd *apiextensionsv1.CustomResourceDefinition) {
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
}
