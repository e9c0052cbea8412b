package apiserver

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// The compiled plans normalize exactly as the plain reflective walk they
// replaced (kept below as the reference) on randomly filled objects.
func TestWirePlanMatchesReflectiveWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	randTime := func() time.Time { return time.Unix(r.Int64N(2e9), r.Int64N(1e9)).UTC() }
	f := randfill.NewWithSeed(5).NilChance(0.3).NumElements(0, 2).Funcs(
		func(t *metav1.Time, _ randfill.Continue) { *t = metav1.NewTime(randTime()) },
		func(t *metav1.MicroTime, _ randfill.Continue) { *t = metav1.NewMicroTime(randTime()) },
		func(q *resource.Quantity, _ randfill.Continue) {
			*q = *resource.NewMilliQuantity(r.Int64N(1e6), resource.DecimalSI)
		},
		func(e *runtime.RawExtension, _ randfill.Continue) { e.Raw = []byte(`{}`) },
	)
	newObjs := []func() runtime.Object{
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &eventsv1.Event{} },
		func() runtime.Object { return &batchv1.Job{} },
		func() runtime.Object { return &corev1.Node{} },
		func() runtime.Object { return &corev1.Secret{} },
	}
	for i := range 300 {
		obj := newObjs[i%len(newObjs)]()
		f.Fill(obj)
		want := obj.DeepCopyObject()
		refWireNormalize(reflect.ValueOf(want).Elem())
		got := wireCopy(obj)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%T #%d: plan and reflective walk differ:\n got %#v\nwant %#v", obj, i, got, want)
		}
	}
}

// refWireTypes caches the reference walk's types.
var refWireTypes sync.Map // reflect.Type -> *refWireType

// refWireNormalize is the normalizing walk as it was before its plans: per value,
// it looks up what of the value's type to walk.
func refWireNormalize(v reflect.Value) {
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
		for _, i := range refWireTypeOf(t).fields {
			refWireNormalize(v.Field(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			refWireNormalize(v.Elem())
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
		if refWireTypeOf(t.Elem()).walk {
			for i := range v.Len() {
				refWireNormalize(v.Index(i))
			}
		}
	case reflect.Map:
		if v.Len() == 0 {
			if !v.IsNil() {
				v.SetZero()
			}
			return
		}
		if refWireTypeOf(t.Elem()).walk {
			it := v.MapRange()
			for it.Next() {
				e := reflect.New(t.Elem()).Elem()
				e.Set(it.Value())
				refWireNormalize(e)
				v.SetMapIndex(it.Key(), e)
			}
		}
	}
}

// refWireType is what of a type's values refWireNormalize walks.
type refWireType struct {
	// walk: values can need normalizing.
	walk bool
	// fields are a struct's exported fields to walk.
	fields []int
}

// refWireTypeOf is what of t's values can need normalizing.
func refWireTypeOf(t reflect.Type) *refWireType {
	if w, ok := refWireTypes.Load(t); ok {
		return w.(*refWireType)
	}
	return refComputeWireType(t, map[reflect.Type]bool{})
}

// refComputeWireType finds and caches t's refWireType. A type met again while it
// is being computed (a recursive type) is walked; only complete entries
// are cached, so concurrent walks never see a partial one.
func refComputeWireType(t reflect.Type, computing map[reflect.Type]bool) *refWireType {
	if w, ok := refWireTypes.Load(t); ok {
		return w.(*refWireType)
	}
	if computing[t] {
		return &refWireType{walk: true}
	}
	computing[t] = true
	walks := func(t reflect.Type) bool { return refComputeWireType(t, computing).walk }
	w := &refWireType{}
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
	refWireTypes.Store(t, w)
	return w
}
