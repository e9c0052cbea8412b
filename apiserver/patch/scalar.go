package patch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var timeType = reflect.TypeFor[metav1.Time]()

// decodeScalar decodes the common scalars of a status patch — a string
// without escapes, true or false, an integer, an RFC 3339 time — into fv
// (or a fresh value behind fv when fv is a pointer) without the JSON
// decoder's reflection, and reports whether it did. The result is the
// strict decoder's: whatever it does not take for certain (escapes,
// numbers that are no integers of fv's size, times that do not parse) is
// left to decodeTyped's strict decoding, which gives the refusal.
func decodeScalar(fv reflect.Value, raw json.RawMessage) bool {
	t := fv.Type()
	if t.Kind() != reflect.Pointer {
		return setScalar(fv, raw)
	}
	if !scalarKind(t.Elem()) {
		return false
	}
	nv := reflect.New(t.Elem())
	if !setScalar(nv.Elem(), raw) {
		return false
	}
	fv.Set(nv)
	return true
}

// scalarKind: setScalar may decode into values of t.
func scalarKind(t reflect.Type) bool {
	if t == timeType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return plainType(t)
	}
	return false
}

// setScalar sets fv, a non-pointer, from raw as the strict decoder would,
// or reports false leaving fv as it was.
func setScalar(fv reflect.Value, raw json.RawMessage) bool {
	t := fv.Type()
	if t == timeType {
		// metav1.Time.UnmarshalJSON: the string parsed as RFC 3339, in
		// local time.
		s, ok := plainString(raw)
		if !ok {
			return false
		}
		pt, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return false
		}
		fv.Set(reflect.ValueOf(metav1.NewTime(pt.Local())))
		return true
	}
	if !scalarKind(t) {
		return false
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := plainString(raw)
		if ok {
			fv.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch string(raw) {
		case "true":
			fv.SetBool(true)
			return true
		case "false":
			fv.SetBool(false)
			return true
		}
		return false
	default: // the signed integers
		// The decoder parses a number into an integer field the same way:
		// base 10, an error when it has a fraction or exponent or does
		// not fit.
		if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
			return false
		}
		n, err := strconv.ParseInt(string(raw), 10, t.Bits())
		if err != nil {
			return false
		}
		fv.SetInt(n)
		return true
	}
}

// plainString is the JSON string raw when it needs no unescaping.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' ||
		bytes.IndexByte(raw, '\\') >= 0 || hasControl(raw) || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// decodeFresh decodes raw into fv, a zero value, as the strict decoder
// would, for the values a status patch brings new (a container status
// list, a condition): plain structs of known fields, pointers to them,
// lists of them and the scalars decodeScalar takes. It reports false, fv
// possibly partly set, for anything else (a map, an unknown or repeated
// key, a directive, a value decodeScalar leaves): the strict decoder must
// decide.
func decodeFresh(fv reflect.Value, raw json.RawMessage) bool {
	if string(raw) == "null" {
		return true // the decoder leaves the zero value
	}
	t := fv.Type()
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct {
			return decodeScalar(fv, raw)
		}
		nv := reflect.New(t.Elem())
		if !decodeFresh(nv.Elem(), raw) {
			return false
		}
		fv.Set(nv)
		return true
	case reflect.Struct:
		if t == timeType {
			return decodeScalar(fv, raw)
		}
		fields, ok := patchFieldsOf(t)
		if !ok {
			return false
		}
		// A repeated key is a strict error: each field is set once.
		seen := make([]bool, t.NumField())
		return eachMember(raw, func(key []byte, v json.RawMessage) bool {
			f, ok := fields[string(key)]
			if !ok || f.quoted || seen[f.index] {
				return false
			}
			seen[f.index] = true
			return decodeFresh(fv.Field(f.index), v)
		})
	case reflect.Slice:
		if !plainType(t) || rawKind(raw) != '[' {
			return false
		}
		elems, ok := splitArray(raw)
		if !ok {
			return false
		}
		// An empty JSON list decodes to an empty, not a nil, slice.
		s := reflect.MakeSlice(t, len(elems), len(elems))
		for i, e := range elems {
			if !decodeFresh(s.Index(i), e) {
				return false
			}
		}
		fv.Set(s)
		return true
	}
	return decodeScalar(fv, raw)
}

// eachMember calls fn with each member of the JSON object data (valid
// JSON) in order, as decodeRawObject splits it but without building a map,
// until fn returns false; false for anything but an object, and for a key
// with escapes.
func eachMember(data []byte, fn func(key []byte, v json.RawMessage) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	if i = skipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) && data[i] == '"' {
		end := bytes.IndexByte(data[i+1:], '"') + i + 1
		if end <= i || bytes.IndexByte(data[i+1:end], '\\') >= 0 {
			return false
		}
		key := data[i+1 : end]
		if i = skipSpace(data, end+1); i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vend := valueEnd(data, i)
		if vend <= i || !fn(key, data[i:vend]) {
			return false
		}
		next, closed, ok := afterMember(data, vend, '}')
		if !ok {
			return false
		}
		if closed {
			return true
		}
		i = next
	}
	return false
}
