package strategy

import (
	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InitMeta sets the metadata the server owns on a new object, as
// rest.BeforeCreate does: a name from generateName (generated reports it),
// a new UID, the creation time, and generation 1 for resources with a spec;
// what the client sent for the others is dropped.
func (s Strategy) InitMeta(obj runtime.Object) (generated bool) {
	m := genericstore.Accessor(obj)
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(GenerateName(m))
		generated = true
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if s.res.HasSpec {
		m.SetGeneration(1)
	}
	return generated
}

// GenerateName is a fresh name from the object's generateName, as
// upstream's names.SimpleNameGenerator makes them.
func GenerateName(m metav1.Object) string {
	return m.GetGenerateName() + utilrand.String(5)
}

// PrepareForCreate defaults a new object (its metadata already set).
func (s Strategy) PrepareForCreate(obj runtime.Object) {
	if s.res.PrepareForCreate != nil {
		s.res.PrepareForCreate(obj)
	}
}

// Validate checks a new object: the object-meta checks, then the
// resource's own validation.
func (s Strategy) Validate(obj runtime.Object) field.ErrorList {
	if s.res.ValidateChecksMeta {
		// Validate makes the metadata checks itself; as upstream's
		// BeforeCreate, its errors are the answer, each listed once.
		return s.res.Validate(obj)
	}
	errs := metaErrors(s.res, obj)
	if s.res.Validate != nil {
		errs = append(errs, s.res.Validate(obj)...)
	}
	return errs
}

// metaErrors are the object-meta checks of a create.
func metaErrors(res *registry.Resource, obj runtime.Object) field.ErrorList {
	var om *metav1.ObjectMeta
	if oma, ok := obj.(metav1.ObjectMetaAccessor); ok {
		om, _ = oma.GetObjectMeta().(*metav1.ObjectMeta)
	}
	if om != nil {
		// The same checks basicNameErrors makes (same name rule).
		return validation.ValidateObjectMeta(om, res.Namespaced, !res.NameIsLabel, field.NewPath("metadata"))
	}
	return basicNameErrors(res, genericstore.Accessor(obj))
}

// basicNameErrors is apimachinery's object-meta validation, for objects
// without a typed ObjectMeta (custom resources).
func basicNameErrors(res *registry.Resource, m metav1.Object) field.ErrorList {
	return validation.ValidateObjectMetaAccessor(m, res.Namespaced, !res.NameIsLabel, field.NewPath("metadata"))
}
