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
		if p := wirePlanOf(v.Type().Elem()); p != nil {
			p.normalize(v.Elem())
		}
	}
	return out
}

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	quantityType  = reflect.TypeFor[resource.Quantity]()
	// wirePlans caches, per type, its wirePlan (nil: nothing to do).
	wirePlans sync.Map // reflect.Type -> *wirePlan
)

// wirePlanKind is what normalizing does to a value.
type wirePlanKind uint8

const (
	planStruct wirePlanKind = iota
	planPointer
	planSlice
	planMap
	planTime
	planMicroTime
	planQuantity
)

// wirePlan is how to normalize the values of one type, compiled once per
// type so the walk needs no lookups: only what can hold a time, a quantity
// or an empty list or map is walked. Plans of recursive types refer to
// themselves; a complete plan is never changed.
type wirePlan struct {
	kind wirePlanKind
	// fields are a struct's exported fields to walk.
	fields []wireField
	// elem is a pointer's, slice's or map's element plan (nil: the
	// elements need nothing).
	elem *wirePlan
	// elemType is a map's element type.
	elemType reflect.Type
}

type wireField struct {
	index int
	plan  *wirePlan
}

// normalize normalizes the addressable v, of the plan's type, in place.
func (p *wirePlan) normalize(v reflect.Value) {
	switch p.kind {
	case planTime:
		tm := v.Addr().Interface().(*metav1.Time)
		if !tm.IsZero() {
			tm.Time = time.Unix(tm.Unix(), 0).Local()
		}
	case planMicroTime:
		tm := v.Addr().Interface().(*metav1.MicroTime)
		if !tm.IsZero() {
			tm.Time = time.Unix(tm.Unix(), int64(time.Duration(tm.Nanosecond()).Truncate(time.Microsecond))).Local()
		}
	case planQuantity:
		q := v.Addr().Interface().(*resource.Quantity)
		if parsed, err := resource.ParseQuantity(q.String()); err == nil {
			*q = parsed
		}
	case planStruct:
		for _, f := range p.fields {
			f.plan.normalize(v.Field(f.index))
		}
	case planPointer:
		if !v.IsNil() && p.elem != nil {
			p.elem.normalize(v.Elem())
		}
	case planSlice:
		if v.Len() == 0 {
			if !v.IsNil() {
				v.SetZero()
			}
			return
		}
		if p.elem != nil {
			for i := range v.Len() {
				p.elem.normalize(v.Index(i))
			}
		}
	case planMap:
		if v.Len() == 0 {
			if !v.IsNil() {
				v.SetZero()
			}
			return
		}
		if p.elem != nil {
			it := v.MapRange()
			for it.Next() {
				e := reflect.New(p.elemType).Elem()
				e.Set(it.Value())
				p.elem.normalize(e)
				v.SetMapIndex(it.Key(), e)
			}
		}
	}
}

// wirePlanOf is t's plan, nil when its values never need normalizing.
func wirePlanOf(t reflect.Type) *wirePlan {
	if p, ok := wirePlans.Load(t); ok {
		return p.(*wirePlan)
	}
	compiling := map[reflect.Type]*wirePlan{}
	p := compileWirePlan(t, compiling)
	for t, c := range compiling {
		wirePlans.LoadOrStore(t, c)
	}
	wirePlans.LoadOrStore(t, p)
	return p
}

// compileWirePlan builds t's plan. A type met again while it is being
// compiled (a recursive type) is walked, through the plan being built.
// Plans are published only once complete, so concurrent walks never see
// a partial one.
func compileWirePlan(t reflect.Type, compiling map[reflect.Type]*wirePlan) *wirePlan {
	if p, ok := wirePlans.Load(t); ok {
		return p.(*wirePlan)
	}
	if p, ok := compiling[t]; ok {
		return p
	}
	switch t {
	case timeType:
		return &wirePlan{kind: planTime}
	case microTimeType:
		return &wirePlan{kind: planMicroTime}
	case quantityType:
		return &wirePlan{kind: planQuantity}
	}
	var p *wirePlan
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // byte strings keep their form
		}
		p = &wirePlan{kind: planSlice}
		compiling[t] = p
		p.elem = compileWirePlan(t.Elem(), compiling)
	case reflect.Map:
		p = &wirePlan{kind: planMap, elemType: t.Elem()}
		compiling[t] = p
		p.elem = compileWirePlan(t.Elem(), compiling)
	case reflect.Pointer:
		p = &wirePlan{kind: planPointer}
		compiling[t] = p
		if p.elem = compileWirePlan(t.Elem(), compiling); p.elem == nil {
			p = nil
		}
	case reflect.Struct:
		p = &wirePlan{kind: planStruct}
		compiling[t] = p
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if fp := compileWirePlan(f.Type, compiling); fp != nil {
				p.fields = append(p.fields, wireField{index: i, plan: fp})
			}
		}
		if len(p.fields) == 0 {
			p = nil
		}
	}
	compiling[t] = p
	return p
}
