package apiserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// deleteFromPrimitiveListPrefix is strategic merge's directive that drops
// values from a list of scalars.
const deleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/"

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	stringSliceType     = reflect.TypeFor[[]string]()
)

// mergeStruct merges patch into dst, an addressable struct, key by key as
// strategic merge does: plain sub-objects recursively, strings and bools
// directly, a deletion from a []string directly, and each other field
// through the unstructured form of that one field. So a status patch
// converts the conditions it names, not the whole status. It reports false
// when the patch is not plain at this level (another directive, a key the
// type lacks, a field the general merge rejects); dst is then partly
// merged and must be dropped.
func mergeStruct(dst reflect.Value, patch map[string]interface{}) bool {
	fields, ok := patchFieldsOf(dst.Type())
	if !ok {
		return false
	}
	for key, v := range patch {
		if name, ok := strings.CutPrefix(key, deleteFromPrimitiveListPrefix); ok {
			if !deleteFromStrings(dst, fields, name, v, patch) {
				return false
			}
			continue
		}
		f, ok := fields[key]
		if !ok || strings.HasPrefix(key, "$") {
			return false
		}
		if !mergeField(dst.Field(f.index), f, v) {
			return false
		}
	}
	return true
}

// mergeField merges the patch value v of one field into fv.
func mergeField(fv reflect.Value, f *patchField, v interface{}) bool {
	if v == nil {
		// null deletes the key; decoding then leaves the zero value.
		fv.SetZero()
		return true
	}
	switch fv.Kind() {
	case reflect.Struct:
		if sub, ok := v.(map[string]interface{}); ok && f.strategy == "" && plainType(fv.Type()) {
			nv := reflect.New(fv.Type()).Elem()
			nv.Set(fv)
			if mergeStruct(nv, sub) {
				fv.Set(nv)
				return true
			}
		}
	case reflect.String:
		if s, ok := v.(string); ok && plainType(fv.Type()) {
			fv.SetString(s)
			return true
		}
	case reflect.Bool:
		if b, ok := v.(bool); ok && plainType(fv.Type()) {
			fv.SetBool(b)
			return true
		}
	}
	return mergeConverted(fv, f, v)
}

// mergeConverted merges v into fv through the unstructured form of a
// struct holding only that field (same type and tags), so the general merge
// sees the field's patch strategy. A value that replaces the field whatever
// it held is decoded without converting the old value.
func mergeConverted(fv reflect.Value, f *patchField, v interface{}) bool {
	patch := map[string]interface{}{f.name: v}
	merged := patch
	if !replaces(f, v) {
		holder := reflect.New(f.single)
		holder.Elem().Field(0).Set(fv)
		orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(holder.Interface())
		if err != nil {
			return false
		}
		meta, err := strategicpatch.NewPatchMetaFromStruct(holder.Elem().Interface())
		if err != nil {
			return false
		}
		if merged, err = strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(orig, patch, meta); err != nil {
			return false
		}
	}
	out := reflect.New(f.single)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, out.Interface(), true); err != nil {
		return false
	}
	fv.Set(out.Elem().Field(0))
	return true
}

// replaces tells whether strategic merge sets the field to v as it is: a
// scalar, or a list without a merge strategy, when v holds no directive and
// no null (the merge would strip those when the field was empty).
func replaces(f *patchField, v interface{}) bool {
	switch v := v.(type) {
	case string, bool, int64, float64:
		return true
	case []interface{}:
		return !strings.Contains(f.strategy, "merge") && clean(v)
	}
	return false
}

// clean: no null and no "$" key anywhere in v.
func clean(v interface{}) bool {
	switch v := v.(type) {
	case nil:
		return false
	case map[string]interface{}:
		for k, e := range v {
			if strings.HasPrefix(k, "$") || !clean(e) {
				return false
			}
		}
	case []interface{}:
		for _, e := range v {
			if !clean(e) {
				return false
			}
		}
	}
	return true
}

// deleteFromStrings applies `$deleteFromPrimitiveList/<name>: [values]` to
// a []string field: every occurrence of the values goes. Anything else (a
// null, non-strings, the list also patched by name) is left to the general
// merge.
func deleteFromStrings(dst reflect.Value, fields map[string]*patchField, name string, v interface{}, patch map[string]interface{}) bool {
	f, ok := fields[name]
	if _, named := patch[name]; !ok || named || !f.omitempty {
		return false
	}
	fv := dst.Field(f.index)
	values, ok := v.([]interface{})
	if !ok || fv.Type() != stringSliceType {
		return false
	}
	drop := make(map[string]bool, len(values))
	for _, e := range values {
		s, ok := e.(string)
		if !ok {
			return false
		}
		drop[s] = true
	}
	cur := fv.Interface().([]string)
	if len(cur) == 0 {
		// Omitted when empty: the merge finds no list to delete from.
		return true
	}
	kept := make([]string, 0, len(cur))
	for _, s := range cur {
		if !drop[s] {
			kept = append(kept, s)
		}
	}
	fv.Set(reflect.ValueOf(kept))
	return true
}

// patchField is what merging needs of one serialised struct field.
type patchField struct {
	index     int
	name      string
	strategy  string       // the patchStrategy tag
	omitempty bool         // omitted from the JSON when empty
	single    reflect.Type // a struct with only this field, same tags
}

var patchFieldCache sync.Map // reflect.Type → map[string]*patchField

// patchFieldsOf lists the serialised fields of struct type t by JSON name;
// false when t is not a plain struct (custom JSON, embedded fields).
func patchFieldsOf(t reflect.Type) (map[string]*patchField, bool) {
	if c, ok := patchFieldCache.Load(t); ok {
		fields, _ := c.(map[string]*patchField)
		return fields, fields != nil
	}
	fields := buildPatchFields(t)
	patchFieldCache.Store(t, fields)
	return fields, fields != nil
}

func buildPatchFields(t reflect.Type) map[string]*patchField {
	if t.Kind() != reflect.Struct || !plainType(t) {
		return nil
	}
	fields := make(map[string]*patchField, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil // inline fields: their keys belong to another struct
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		fields[name] = &patchField{
			index:     i,
			name:      name,
			strategy:  sf.Tag.Get("patchStrategy"),
			omitempty: strings.Contains(","+opts+",", ",omitempty,"),
			single:    reflect.StructOf([]reflect.StructField{{Name: sf.Name, Type: sf.Type, Tag: sf.Tag}}),
		}
	}
	return fields
}

// plainType: values of t decode by reflection, not by their own JSON code.
func plainType(t reflect.Type) bool {
	return !t.Implements(jsonUnmarshalerType) && !reflect.PointerTo(t).Implements(jsonUnmarshalerType)
}
