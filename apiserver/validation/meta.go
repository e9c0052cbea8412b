package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateObjectMeta checks name/generateName, namespace presence, labels and
// annotations. nameIsDNSSubdomain selects the name rule (DNS-1123 subdomain
// when true, DNS-1123 label otherwise).
func ValidateObjectMeta(meta *metav1.ObjectMeta, namespaced, nameIsDNSSubdomain bool, fldPath *field.Path) field.ErrorList {
	nameFn := apimachineryvalidation.NameIsDNSLabel
	if nameIsDNSSubdomain {
		nameFn = apimachineryvalidation.NameIsDNSSubdomain
	}
	return apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, fldPath)
}

// ValidateObjectMetaUpdate checks the metadata rules of an update (name,
// namespace, uid, creationTimestamp, ... immutable; labels and annotations
// valid).
func ValidateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, fldPath)
}

// validateNonnegative mirrors ValidateNonnegativeField.
func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, "must be greater than or equal to 0")}
	}
	return nil
}

// validateImmutable mirrors ValidateImmutableField.
func validateImmutable(newVal, oldVal interface{}, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// validateHasLabel requires meta to carry key=expected (ValidateHasLabel).
func validateHasLabel(meta metav1.ObjectMeta, fldPath *field.Path, key, expected string) field.ErrorList {
	actual, found := meta.Labels[key]
	if !found {
		return field.ErrorList{field.Required(fldPath.Child("labels").Key(key), "must be '"+expected+"'")}
	}
	if actual != expected {
		return field.ErrorList{field.Invalid(fldPath.Child("labels").Key(key), actual, "must be '"+expected+"'")}
	}
	return nil
}
