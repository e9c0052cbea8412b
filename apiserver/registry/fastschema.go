package registry

import (
	"math"
	"reflect"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// fastSchema checks values against a CRD schema made only of objects with
// declared properties, required keys, strings (plain or date-time),
// booleans, integers (int32 or int64) and numbers — the shape of
// batchlet's own ContainerResult. kube-openapi's validator builds a
// validator per field of every object it checks, which made it most of
// the cost of a result's create; a value that passes this check passes
// that validator too, so the answer is the same, and anything else (an
// error to report, a value this check does not know) goes to it for its
// exact messages.
type fastSchema struct {
	typ        string
	format     string
	required   []string
	properties map[string]*fastSchema
}

// compileFastSchema returns nil when s uses anything beyond what fastSchema
// checks (patterns, enums, bounds, lists, maps, CEL rules, extensions…).
func compileFastSchema(s *apiextensions.JSONSchemaProps) *fastSchema {
	if s == nil {
		return nil
	}
	rest := *s
	rest.Description, rest.Title, rest.Example, rest.ExternalDocs, rest.Default = "", "", nil, nil, nil
	rest.Type, rest.Format, rest.Required, rest.Properties = "", "", nil, nil
	if !reflect.DeepEqual(rest, apiextensions.JSONSchemaProps{}) {
		return nil
	}
	f := &fastSchema{typ: s.Type, format: s.Format, required: s.Required}
	switch {
	case s.Type == "object":
		if len(s.Properties) > 0 {
			f.properties = make(map[string]*fastSchema, len(s.Properties))
		}
		for name := range s.Properties {
			p := s.Properties[name]
			if f.properties[name] = compileFastSchema(&p); f.properties[name] == nil {
				return nil
			}
		}
	case s.Type == "string" && (s.Format == "" || s.Format == "date-time"),
		s.Type == "integer" && (s.Format == "" || s.Format == "int32" || s.Format == "int64"),
		s.Type == "number" && (s.Format == "" || s.Format == "double"),
		s.Type == "boolean" && s.Format == "":
	default:
		return nil
	}
	if len(f.required) > 0 && f.typ != "object" {
		return nil
	}
	return f
}

// conforms says whether v certainly passes the schema. Objects with
// declared properties accept only those keys (pruning removed any other).
func (f *fastSchema) conforms(v interface{}) bool {
	switch f.typ {
	case "object":
		m, ok := v.(map[string]interface{})
		if !ok {
			return false
		}
		for _, name := range f.required {
			if _, ok := m[name]; !ok {
				return false
			}
		}
		if f.properties == nil {
			return true // "type: object" alone, like metadata
		}
		for k, val := range m {
			p, ok := f.properties[k]
			if !ok || !p.conforms(val) {
				return false
			}
		}
		return true
	case "string":
		s, ok := v.(string)
		return ok && (f.format == "" || (f.format == "date-time" && isSecondsDateTime(s)) || strfmt.Default.Validates(f.format, s))
	case "integer":
		i, ok := v.(int64)
		return ok && (f.format != "int32" || (i >= math.MinInt32 && i <= math.MaxInt32))
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}

// fastSchemaValidator answers from fastSchema when the value conforms and
// asks the full validator otherwise.
type fastSchemaValidator struct {
	fast *fastSchema
	full apiservervalidation.SchemaValidator
}

// withFastSchema wraps full when schema has fastSchema's shape.
func withFastSchema(schema *apiextensions.JSONSchemaProps, full apiservervalidation.SchemaValidator) apiservervalidation.SchemaValidator {
	if fast := compileFastSchema(schema); fast != nil && full != nil {
		return fastSchemaValidator{fast: fast, full: full}
	}
	return full
}

func (v fastSchemaValidator) Validate(value interface{}, options ...apiservervalidation.ValidationOption) *validate.Result {
	if v.fast.conforms(value) {
		return &validate.Result{}
	}
	return v.full.Validate(value, options...)
}

// ValidateUpdate: ratcheting only forgives errors, so a conforming new
// value is valid whatever the old one was.
func (v fastSchemaValidator) ValidateUpdate(value, old interface{}, options ...apiservervalidation.ValidationOption) *validate.Result {
	if v.fast.conforms(value) {
		return &validate.Result{}
	}
	return v.full.ValidateUpdate(value, old, options...)
}

// isSecondsDateTime says that s is a date-time strfmt accepts in the form
// metav1.Time writes, 2006-01-02T15:04:05Z, without strfmt's regexp:
// strfmt lowercases it, takes what precedes the 't' as a date and matches
// the rest with hours <= 23, minutes and seconds <= 59. Other forms go to
// strfmt.
func isSecondsDateTime(s string) bool {
	if len(s) != len("2006-01-02T15:04:05Z") || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return false
	}
	for _, i := range []int{11, 12, 14, 15, 17, 18} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s[11:13] <= "23" && s[14:16] <= "59" && s[17:19] <= "59" && strfmt.IsDate(s[:10])
}
