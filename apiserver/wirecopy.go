package apiserver

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// wireCopy is a deep copy of obj as a protobuf round trip would give it
// (what an in-process call would otherwise encode and decode): times in
// whole seconds (metav1.Time) or microseconds (metav1.MicroTime) in the
// local zone, and empty lists and maps absent. Byte strings keep their
// form (protobuf keeps an empty one). Quantities are parsed again from
// their canonical string, as decoding does.
func wireCopy(obj runtime.Object) runtime.Object {
	out := obj.DeepCopyObject()
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		wireNormalize(v.Elem())
	}
	return out
}

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	quantityType  = reflect.TypeFor[resource.Quantity]()
	// wireTypes caches, per type, what of its values can hold a time or an
	// empty list or map (only that is walked).
	wireTypes sync.Map // reflect.Type -> *wireType
)

// wireType is what of a type's values wireNormalize walks.
type wireType struct {
	// walk: values can need normalizing.
	walk bool
	// fields are a struct's exported fields to walk.
	fields []int
}

// wireNormalize normalizes the addressable v in place.
func wireNormalize(v reflect.Value) {
	t := v.Type()
	switch v.Kind() {
	case reflect.Struct:
		switch t {
		case timeType:
			tm := v.Addr().Interface().(*metav1.Time)
			if !tm.IsZero() {
				tm.Time = time.Unix(tm.Unix(), 0).Local()
			}
			return
		case microTimeType:
			tm := v.Addr().Interface().(*metav1.MicroTime)
			if !tm.IsZero() {
				tm.Time = time.Unix(tm.Unix(), int64(time.Duration(tm.Nanosecond()).Truncate(time.Microsecond))).Local()
			}
			return
		case quantityType:
			q := v.Addr().Interface().(*resource.Quantity)
			if parsed, err := resource.ParseQuantity(q.String()); err == nil {
				*q = parsed
			}
			return
		}
		for _, i := range wireTypeOf(t).fields {
			wireNormalize(v.Field(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			wireNormalize(v.Elem())
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return
		}
		if v.Len() == 0 {
			if !v.IsNil() {
				v.SetZero()
			}
			return
		}
		if wireTypeOf(t.Elem()).walk {
			for i := range v.Len() {
				wireNormalize(v.Index(i))
			}
		}
	case reflect.Map:
		if v.Len() == 0 {
			if !v.IsNil() {
				v.SetZero()
			}
			return
		}
		if wireTypeOf(t.Elem()).walk {
			it := v.MapRange()
			for it.Next() {
				e := reflect.New(t.Elem()).Elem()
				e.Set(it.Value())
				wireNormalize(e)
				v.SetMapIndex(it.Key(), e)
			}
		}
	}
}

// wireTypeOf is what of t's values can need normalizing.
func wireTypeOf(t reflect.Type) *wireType {
	if w, ok := wireTypes.Load(t); ok {
		return w.(*wireType)
	}
	return computeWireType(t, map[reflect.Type]bool{})
}

// computeWireType finds and caches t's wireType. A type met again while it
// is being computed (a recursive type) is walked; only complete entries
// are cached, so concurrent walks never see a partial one.
func computeWireType(t reflect.Type, computing map[reflect.Type]bool) *wireType {
	if w, ok := wireTypes.Load(t); ok {
		return w.(*wireType)
	}
	if computing[t] {
		return &wireType{walk: true}
	}
	computing[t] = true
	walks := func(t reflect.Type) bool { return computeWireType(t, computing).walk }
	w := &wireType{}
	switch t.Kind() {
	case reflect.Slice:
		w.walk = t.Elem().Kind() != reflect.Uint8
	case reflect.Map:
		w.walk = true
	case reflect.Pointer:
		w.walk = walks(t.Elem())
	case reflect.Struct:
		if t == timeType || t == microTimeType || t == quantityType {
			w.walk = true
			break
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && walks(f.Type) {
				w.fields = append(w.fields, i)
			}
		}
		w.walk = len(w.fields) > 0
	}
	delete(computing, t)
	wireTypes.Store(t, w)
	return w
}
