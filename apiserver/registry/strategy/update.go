package strategy

import (
	"bytes"
	"reflect"
	"unsafe"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PrepareForUpdate keeps the metadata an update may not change from old
// (the UID only when the new object has none, as kube-apiserver's
// BeforeUpdate: a different one fails validation as immutable), runs the mode's strategy hook and, for a main-resource update of a
// resource with a spec, bumps the generation when the spec changed. It
// reports that change so ValidateUpdate need not compare the specs again.
func (s Strategy) PrepareForUpdate(obj, old runtime.Object, mode Mode) (specChanged bool) {
	nm, om := genericstore.Accessor(obj), genericstore.Accessor(old)
	obj.GetObjectKind().SetGroupVersionKind(s.res.GVK())
	nm.SetName(om.GetName())
	nm.SetNamespace(om.GetNamespace())
	if nm.GetUID() == "" {
		nm.SetUID(om.GetUID())
	}
	nm.SetCreationTimestamp(om.GetCreationTimestamp())
	nm.SetDeletionTimestamp(om.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(om.GetGeneration())
	nm.SetResourceVersion(om.GetResourceVersion())
	switch mode {
	case Raw:
	case Status:
		if s.res.PrepareForStatusUpdate != nil {
			s.res.PrepareForStatusUpdate(obj, old)
		}
	default:
		if s.res.PrepareForUpdate != nil {
			s.res.PrepareForUpdate(obj, old)
		}
		specChanged = s.res.HasSpec && specsDiffer(obj, old)
		if specChanged {
			nm.SetGeneration(om.GetGeneration() + 1)
		}
	}
	return specChanged
}

// ValidateUpdate checks an update prepared by PrepareForUpdate (which
// reported specChanged): the object-meta update checks first, unless the
// resource's validation makes them, then the mode's validation.
func (s Strategy) ValidateUpdate(obj, old runtime.Object, mode Mode, specChanged bool) field.ErrorList {
	var errs field.ErrorList
	switch mode {
	case Raw:
	case Status:
		if s.res.ValidateStatusUpdate != nil {
			errs = s.res.ValidateStatusUpdate(obj, old)
		}
	default:
		switch {
		case s.res.HasSpec && s.res.ValidateUpdateSpecKnown != nil:
			errs = s.res.ValidateUpdateSpecKnown(obj, old, !specChanged)
		case s.res.ValidateUpdate != nil:
			errs = s.res.ValidateUpdate(obj, old)
		}
	}
	if !s.res.ValidateUpdateChecksMeta || mode == Raw {
		nm, om := genericstore.Accessor(obj), genericstore.Accessor(old)
		errs = append(validation.ValidateObjectMetaAccessorUpdate(validation.UnchangedHidden(nm, om), om, field.NewPath("metadata")), errs...)
	}
	return errs
}

// specsDiffer says whether the Spec fields of a and b differ semantically
// (objects without a Spec never change it). A spec the update left as it
// was — the new object's Spec field holds the very same values, slices and
// pointers as the old one's, as a metadata-only patch of the shared current
// object leaves it — is equal without a deep comparison; otherwise the
// specs are compared through pointers, so the comparison neither copies
// them nor descends into parts they share.
func specsDiffer(a, b runtime.Object) bool {
	av := reflect.ValueOf(a).Elem().FieldByName("Spec")
	bv := reflect.ValueOf(b).Elem().FieldByName("Spec")
	if !av.IsValid() || !bv.IsValid() {
		return false
	}
	if sameMemory(av, bv) {
		return false
	}
	return !equality.Semantic.DeepEqual(av.Addr().Interface(), bv.Addr().Interface())
}

// sameMemory says whether the addressable values a and b, of one type,
// hold identical bytes: the same scalars and the same references, so
// whatever they reach is one and the same memory. API specs have no
// floating-point fields (the API conventions forbid them), the one case
// where identical bytes (a NaN) are not semantically equal.
func sameMemory(a, b reflect.Value) bool {
	if a.Type() != b.Type() || !a.CanAddr() || !b.CanAddr() {
		return false
	}
	size := a.Type().Size()
	if size == 0 {
		return true
	}
	ab := unsafe.Slice((*byte)(a.Addr().UnsafePointer()), size)
	bb := unsafe.Slice((*byte)(b.Addr().UnsafePointer()), size)
	return bytes.Equal(ab, bb)
}

// MayShare says whether the new object of an update of res in mode, made
// by fieldManager ("" when none was named), may share parts with the
// current (shared, never written) object, so the patch need not deep-copy
// it first. Status strategies only put the old spec back and status
// validation only reads; a main-resource update defaults in place
// (namespace labels) unless res's strategy copies on write (pods); and a
// named field manager rewrites the object.
func MayShare(res *registry.Resource, mode Mode, fieldManager string) bool {
	if fieldManager != "" {
		return false
	}
	return mode == Status || (mode == Main && res.PrepareForUpdateCopiesOnWrite)
}
