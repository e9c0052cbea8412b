package validation

import (
	"maps"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateObjectMeta checks name/generateName, namespace presence, labels and
// annotations. nameIsDNSSubdomain selects the name rule (DNS-1123 subdomain
// when true, DNS-1123 label otherwise).
func ValidateObjectMeta(meta *metav1.ObjectMeta, namespaced, nameIsDNSSubdomain bool, fldPath *field.Path) field.ErrorList {
	return ValidateObjectMetaAccessor(meta, namespaced, nameIsDNSSubdomain, fldPath)
}

// ValidateObjectMetaUpdate checks the metadata rules of an update (name,
// namespace, uid, creationTimestamp, ... immutable; labels and annotations
// valid).
func ValidateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	return ValidateObjectMetaAccessorUpdate(UnchangedHidden(newMeta, oldMeta), oldMeta, fldPath)
}

// validateObjectMetaOfUpdate is ValidateObjectMeta of an update's new
// metadata, skipping what UnchangedHidden hides.
func validateObjectMetaOfUpdate(newMeta, oldMeta *metav1.ObjectMeta, namespaced, nameIsDNSSubdomain bool, fldPath *field.Path) field.ErrorList {
	return ValidateObjectMetaAccessor(UnchangedHidden(newMeta, oldMeta), namespaced, nameIsDNSSubdomain, fldPath)
}

// UnchangedHidden is newMeta for validating an update: labels and
// annotations equal to the old object's read as empty. Every stored object
// passed the same label and annotation checks on its way in (create and
// update validate them, server-internal writes keep them), so checking them
// again gives no error and costs a regexp per key on every status write.
func UnchangedHidden(newMeta, oldMeta metav1.Object) metav1.Object {
	hideLabels := maps.Equal(newMeta.GetLabels(), oldMeta.GetLabels())
	hideAnnotations := maps.Equal(newMeta.GetAnnotations(), oldMeta.GetAnnotations())
	if !hideLabels && !hideAnnotations {
		return newMeta
	}
	return hiddenMeta{Object: newMeta, hideLabels: hideLabels, hideAnnotations: hideAnnotations}
}

// hiddenMeta reads as its Object but for the hidden labels/annotations.
type hiddenMeta struct {
	metav1.Object
	hideLabels, hideAnnotations bool
}

func (m hiddenMeta) GetLabels() map[string]string {
	if m.hideLabels {
		return nil
	}
	return m.Object.GetLabels()
}

func (m hiddenMeta) GetAnnotations() map[string]string {
	if m.hideAnnotations {
		return nil
	}
	return m.Object.GetAnnotations()
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
