package validation

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEnum checks a required enum field: Required when empty,
// NotSupported (listing supported in this order) when not one of them.
func validateEnum[T ~string](v T, fldPath *field.Path, supported ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if slices.Contains(supported, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, v, supported)}
}
