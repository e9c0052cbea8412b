package patch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
)

// deleteFromPrimitiveListPrefix is strategic merge's directive that drops
// values from a list of scalars.
const deleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/"

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	stringSliceType     = reflect.TypeFor[[]string]()
)

// mergeOutcome says how far the field-by-field merge got.
type mergeOutcome int

const (
	merged  mergeOutcome = iota
	general              // leave this struct to the general merge
	refuse               // leave the patch to the JSON path: it may fail there
)

// mergeStruct merges patch into dst, an addressable struct, key by key as
// strategic merge does: plain sub-objects recursively, values that replace
// the field (scalars, lists without a merge strategy) decoded straight from
// the patch's JSON, a deletion from a []string directly, and each other
// field through the unstructured form of that one field. So a status patch
// converts the conditions it names, not the whole status. Unless it
// merged, dst is partly merged and must be dropped: general when a
// directive at this level needs the general merge, refuse when a key or
// value may be an error the JSON path must report.
func mergeStruct(dst reflect.Value, patch map[string]json.RawMessage) mergeOutcome {
	fields, ok := patchFieldsOf(dst.Type())
	if !ok {
		return general
	}
	for key, raw := range patch {
		if name, ok := strings.CutPrefix(key, deleteFromPrimitiveListPrefix); ok {
			if _, named := patch[name]; named || !deleteFromStrings(dst, fields, name, raw) {
				return general
			}
			continue
		}
		if strings.HasPrefix(key, "$") {
			return general
		}
		f, ok := fields[key]
		if !ok {
			return refuse
		}
		if out := mergeField(dst.Field(f.index), f, raw); out != merged {
			return out
		}
	}
	return merged
}

// mergeField merges the patch value raw of one field into fv: merged or
// refuse.
func mergeField(fv reflect.Value, f *patchField, raw json.RawMessage) mergeOutcome {
	switch rawKind(raw) {
	case 'n':
		// null deletes the key; decoding then leaves the zero value.
		fv.SetZero()
		return merged
	case '{':
		if fv.Kind() == reflect.Struct && f.strategy == "" && plainType(fv.Type()) {
			sub, ok := decodeRawObject(raw)
			if !ok {
				return refuse
			}
			nv := reflect.New(fv.Type()).Elem()
			nv.Set(fv)
			switch mergeStruct(nv, sub) {
			case merged:
				fv.Set(nv)
				return merged
			case refuse:
				return refuse
			}
		}
	case '[':
		// A list without a merge strategy is replaced by the patch's, as
		// is, unless directives in it need the general merge.
		switch {
		case bytes.Contains(raw, []byte(`"$`)):
		case !strings.Contains(f.strategy, "merge"):
			return decodeTyped(fv, raw)
		default:
			if out := mergeKeyedList(fv, f, raw); out != general {
				return out
			}
		}
	default:
		// A scalar replaces whatever the field held.
		return decodeTyped(fv, raw)
	}
	v, ok := decodeAny(raw)
	if !ok || !mergeConverted(fv, f, v) {
		return refuse
	}
	return merged
}

// mergeKeyedList merges the patch list raw into fv, a list of plain structs
// merged by a string key (conditions by type, pod IPs by ip), as strategic
// merge does when no key repeats: a patch element with the key of a current
// one merges into it, others are added; the result holds the patch's
// elements in patch order with the current elements the patch does not
// name kept before the first patch element that followed them. Anything
// else (repeated or missing keys, directives) is general.
func mergeKeyedList(fv reflect.Value, f *patchField, raw json.RawMessage) mergeOutcome {
	if f.mergeKey == "" || !f.omitempty || fv.Kind() != reflect.Slice {
		return general
	}
	elemType := fv.Type().Elem()
	keyField, ok := jsonFieldIndex(elemType, f.mergeKey)
	if !ok || elemType.Kind() != reflect.Struct || !plainType(elemType) || elemType.Field(keyField).Type.Kind() != reflect.String {
		return general
	}
	elems, ok := splitArray(raw)
	if !ok {
		return general
	}
	if fv.Len() == 0 {
		// Omitted when empty: the merge takes the patch's list as it is.
		return decodeTyped(fv, raw)
	}
	keyOmitted := keyOmittedWhenEmpty(elemType, f.mergeKey)
	curIndex := make(map[string]int, fv.Len())
	for i := 0; i < fv.Len(); i++ {
		k := fv.Index(i).Field(keyField).String()
		if _, dup := curIndex[k]; dup || (k == "" && keyOmitted) {
			// An empty key the JSON omits (an image pull secret without
			// a name) is no key: strategic merge fails on that element,
			// and the general merge must report it.
			return general
		}
		curIndex[k] = i
	}
	right := reflect.MakeSlice(fv.Type(), len(elems), len(elems))
	rightAt := make([]int, len(elems)) // index in the current list, -1 if new
	named := make(map[string]bool, len(elems))
	for j, e := range elems {
		members, ok := decodeRawObject(e)
		if !ok {
			return general
		}
		k, ok := rawString(members[f.mergeKey])
		if !ok || named[k] {
			return general
		}
		named[k] = true
		at, found := curIndex[k]
		rightAt[j] = -1
		if !found {
			if out := decodeTyped(right.Index(j), e); out != merged {
				return out
			}
			continue
		}
		rightAt[j] = at
		right.Index(j).Set(fv.Index(at))
		if out := mergeStruct(right.Index(j), members); out != merged {
			return out
		}
	}
	fv.Set(interleave(fv, right, rightAt, named, keyField))
	return merged
}

// keyOmittedWhenEmpty: the merge key field of the list's element type is
// left out of the JSON when empty (omitempty).
func keyOmittedWhenEmpty(elemType reflect.Type, mergeKey string) bool {
	fields, ok := patchFieldsOf(elemType)
	if !ok {
		return true // unknown: treat an empty key as missing
	}
	f, ok := fields[mergeKey]
	return !ok || f.omitempty
}

// interleave puts the current elements the patch does not name (left, in
// current order) between the patch's (right, in patch order): a left
// element goes first while it stood before the right one in the current
// list — strategic merge's mergeSortedSlice.
func interleave(cur, right reflect.Value, rightAt []int, named map[string]bool, keyField int) reflect.Value {
	var leftAt []int
	for i := 0; i < cur.Len(); i++ {
		if !named[cur.Index(i).Field(keyField).String()] {
			leftAt = append(leftAt, i)
		}
	}
	out := reflect.MakeSlice(cur.Type(), 0, len(leftAt)+right.Len())
	i, j := 0, 0
	for i < len(leftAt) || j < right.Len() {
		if j >= right.Len() || (i < len(leftAt) && rightAt[j] >= 0 && leftAt[i] < rightAt[j]) {
			out = reflect.Append(out, cur.Index(leftAt[i]))
			i++
			continue
		}
		out = reflect.Append(out, right.Index(j))
		j++
	}
	return out
}

// rawString decodes raw as a JSON string without escapes.
func rawString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 ||
		hasControl(raw) || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// splitArray splits a JSON array (valid JSON) into its elements.
func splitArray(data []byte) ([]json.RawMessage, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	var elems []json.RawMessage
	if i = skipSpace(data, i+1); i < len(data) && data[i] == ']' {
		return elems, true
	}
	for i < len(data) {
		end := valueEnd(data, i)
		if end <= i {
			return nil, false
		}
		elems = append(elems, data[i:end])
		next, closed, ok := afterMember(data, end, ']')
		if !ok {
			return nil, false
		}
		if closed {
			return elems, true
		}
		i = next
	}
	return nil, false
}

// afterMember reads past what follows a member of an array or object that
// ends at end: the closing bracket (closed) or a comma, giving where the
// next member starts; ok is false for anything else.
func afterMember(data []byte, end int, closer byte) (next int, closed, ok bool) {
	i := skipSpace(data, end)
	switch {
	case i >= len(data):
		return 0, false, false
	case data[i] == closer:
		return i + 1, true, true
	case data[i] != ',':
		return 0, false, false
	}
	return skipSpace(data, i+1), false, true
}

// decodeTyped decodes raw into fv as the JSON path's strict decoding of the
// merged object would: a fresh value, unknown or duplicate fields refused.
func decodeTyped(fv reflect.Value, raw json.RawMessage) mergeOutcome {
	if decodeScalar(fv, raw) {
		return merged
	}
	if fresh := reflect.New(fv.Type()).Elem(); decodeFresh(fresh, raw) {
		fv.Set(fresh)
		return merged
	}
	nv := reflect.New(fv.Type())
	if strictErrs, err := kjson.UnmarshalStrict(raw, nv.Interface()); err != nil || len(strictErrs) > 0 {
		return refuse
	}
	fv.Set(nv.Elem())
	return merged
}

// hasControl: raw has a byte JSON strings may not hold unescaped.
func hasControl(raw []byte) bool {
	for _, c := range raw {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// rawKind is the first byte of a JSON value: '{', '[', '"', 'n' (null), ...
func rawKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// decodeRawObject splits a JSON object into its members, each value a
// slice of data; false for anything else, a key with escapes, or duplicate
// keys. data is valid JSON (the request body was checked), so one scan
// finds the values' ends; each value is decoded strictly where it is used.
func decodeRawObject(data []byte) (map[string]json.RawMessage, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	if i = skipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return m, true
	}
	for i < len(data) && data[i] == '"' {
		end := bytes.IndexByte(data[i+1:], '"') + i + 1
		if end <= i || bytes.IndexByte(data[i+1:end], '\\') >= 0 {
			return nil, false
		}
		key := string(data[i+1 : end])
		if i = skipSpace(data, end+1); i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		vend := valueEnd(data, i)
		if _, dup := m[key]; dup || vend <= i {
			return nil, false
		}
		m[key] = data[i:vend]
		next, closed, ok := afterMember(data, vend, '}')
		if !ok {
			return nil, false
		}
		if closed {
			return m, true
		}
		i = next
	}
	return nil, false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// valueEnd is the end of the JSON value starting at data[i] (0 if none).
func valueEnd(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch c := data[j]; c {
		case '"':
			if j = stringEnd(data, j); j < 0 {
				return 0
			}
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j // the end of a scalar before the parent closes
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return j
			}
		}
	}
	if depth == 0 {
		return len(data)
	}
	return 0
}

// stringEnd is the index of the quote closing the string opened at i.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// decodeMap decodes a JSON object as strategic merge reads a patch.
func decodeMap(data []byte) (map[string]interface{}, bool) {
	var m map[string]interface{}
	if strictErrs, err := kjson.UnmarshalStrict(data, &m); err != nil || len(strictErrs) > 0 || m == nil {
		return nil, false
	}
	return m, true
}

// decodeAny decodes a JSON value as strategic merge reads a patch.
func decodeAny(data []byte) (interface{}, bool) {
	var v interface{}
	if strictErrs, err := kjson.UnmarshalStrict(data, &v); err != nil || len(strictErrs) > 0 {
		return nil, false
	}
	return v, true
}

// rawIsString: raw is the JSON string want.
func rawIsString(raw json.RawMessage, want string) bool {
	v, ok := decodeAny(raw)
	return ok && v == want
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
// null, non-strings) is left to the general merge.
func deleteFromStrings(dst reflect.Value, fields map[string]*patchField, name string, raw json.RawMessage) bool {
	f, ok := fields[name]
	if !ok || !f.omitempty {
		return false
	}
	fv := dst.Field(f.index)
	var values []interface{}
	if rawKind(raw) != '[' || fv.Type() != stringSliceType {
		return false
	}
	if strictErrs, err := kjson.UnmarshalStrict(raw, &values); err != nil || len(strictErrs) > 0 {
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
	mergeKey  string       // the patchMergeKey tag
	omitempty bool         // omitted from the JSON when empty
	quoted    bool         // the ",string" option: a scalar sent as a string
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
			mergeKey:  sf.Tag.Get("patchMergeKey"),
			omitempty: strings.Contains(","+opts+",", ",omitempty,"),
			quoted:    strings.Contains(","+opts+",", ",string,"),
			single:    reflect.StructOf([]reflect.StructField{{Name: sf.Name, Type: sf.Type, Tag: sf.Tag}}),
		}
	}
	return fields
}

// plainType: values of t decode by reflection, not by their own JSON code.
func plainType(t reflect.Type) bool {
	return !t.Implements(jsonUnmarshalerType) && !reflect.PointerTo(t).Implements(jsonUnmarshalerType)
}
