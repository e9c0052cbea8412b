package apiserver

import (
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// wireCopy is a deep copy of obj as a protobuf round trip would give it
// (what an in-process call would otherwise encode and decode): times in
// whole seconds (metav1.Time) or microseconds (metav1.MicroTime) in the
// local zone, and empty lists and maps absent. Byte strings keep their
// form (protobuf keeps an empty one).
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
	// wireTypes caches, per type, whether values of it can hold a time or
	// an empty list or map (only those are walked).
	wireTypes sync.Map // reflect.Type -> bool
)

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
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && walksWire(f.Type) {
				wireNormalize(v.Field(i))
			}
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
		if walksWire(t.Elem()) {
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
		if walksWire(t.Elem()) {
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

// walksWire reports whether values of t can need normalizing.
func walksWire(t reflect.Type) bool {
	if b, ok := wireTypes.Load(t); ok {
		return b.(bool)
	}
	wireTypes.Store(t, true) // a recursive type refers to itself: walk it
	b := computeWalksWire(t)
	wireTypes.Store(t, b)
	return b
}

func computeWalksWire(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8
	case reflect.Map:
		return true
	case reflect.Pointer:
		return walksWire(t.Elem())
	case reflect.Struct:
		if t == timeType || t == microTimeType {
			return true
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && walksWire(f.Type) {
				return true
			}
		}
	}
	return false
}
