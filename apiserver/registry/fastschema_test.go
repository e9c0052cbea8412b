package registry

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// installedSchema is the internal schema of install's CRD name, version v1.
func installedSchema(t testing.TB, name string) *apiextensions.JSONSchemaProps {
	t.Helper()
	crd := installedCRD(t, name)
	props, _, err := versionSchema(crd, &crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	return props
}

func resultObject(spec map[string]interface{}) map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "results.batchlet.dev/v1", "kind": "ContainerResult",
		"metadata": map[string]interface{}{"name": "p.c.0", "namespace": "default", "labels": map[string]interface{}{"a": "b"}},
		"spec":     spec,
	}
}

func validSpec() map[string]interface{} {
	return map[string]interface{}{
		"podName": "p", "podUID": "u", "nodeName": "n", "jobName": "j", "jobUID": "ju",
		"completionIndex": int64(3), "containerName": "c", "initContainer": false,
		"attempt": int64(0), "exitCode": int64(0), "signal": int64(9), "reason": "Completed",
		"message": "m", "startedAt": "2026-11-26T10:00:00Z", "finishedAt": "2026-11-26T10:00:01Z",
		"logTail": "hello\n", "logTruncated": true,
	}
}

func withSpec(change func(map[string]interface{})) map[string]interface{} {
	s := validSpec()
	change(s)
	return resultObject(s)
}

func errorStrings(r *validate.Result) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Error())
	}
	return out
}

// The wrapped validator answers exactly as the full one, and takes the
// fast path only for values the full validator accepts.
func TestFastSchemaAgreesWithFullValidator(t *testing.T) {
	props := installedSchema(t, "containerresults.results.batchlet.dev")
	full, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	fast := compileFastSchema(props)
	if fast == nil {
		t.Fatal("the ContainerResult schema has no fast check")
	}
	wrapped := withFastSchema(props, full)
	tests := []struct {
		name      string
		obj       interface{}
		wantValid bool
	}{
		{"complete", resultObject(validSpec()), true},
		{"required only", resultObject(map[string]interface{}{"podName": "p", "podUID": "u", "containerName": "c", "attempt": int64(1), "exitCode": int64(2)}), true},
		{"negative exit code", withSpec(func(s map[string]interface{}) { s["exitCode"] = int64(-1) }), true},
		{"no spec", map[string]interface{}{"apiVersion": "results.batchlet.dev/v1", "kind": "ContainerResult", "metadata": map[string]interface{}{}}, false},
		{"spec not an object", func() interface{} { o := resultObject(nil); o["spec"] = "x"; return o }(), false},
		{"no podName", withSpec(func(s map[string]interface{}) { delete(s, "podName") }), false},
		{"no exitCode", withSpec(func(s map[string]interface{}) { delete(s, "exitCode") }), false},
		{"attempt a string", withSpec(func(s map[string]interface{}) { s["attempt"] = "1" }), false},
		{"exitCode a float", withSpec(func(s map[string]interface{}) { s["exitCode"] = 1.5 }), false},
		{"exitCode integral float", withSpec(func(s map[string]interface{}) { s["exitCode"] = float64(1) }), true},
		{"attempt past int32", withSpec(func(s map[string]interface{}) { s["attempt"] = int64(1) << 40 }), false},
		{"podName a number", withSpec(func(s map[string]interface{}) { s["podName"] = int64(1) }), false},
		{"finishedAt not a time", withSpec(func(s map[string]interface{}) { s["finishedAt"] = "yesterday" }), false},
		{"initContainer a string", withSpec(func(s map[string]interface{}) { s["initContainer"] = "true" }), false},
		{"null reason", withSpec(func(s map[string]interface{}) { s["reason"] = nil }), false},
		{"unknown spec field", withSpec(func(s map[string]interface{}) { s["extra"] = "x" }), true},
		{"kind a number", func() interface{} { o := resultObject(validSpec()); o["kind"] = int64(1); return o }(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := full.Validate(tt.obj)
			if want.IsValid() != tt.wantValid {
				t.Fatalf("full validator valid=%v, test expects %v: %v", want.IsValid(), tt.wantValid, errorStrings(want))
			}
			if fast.conforms(tt.obj) && !want.IsValid() {
				t.Fatalf("fast check accepts what the full validator rejects: %v", errorStrings(want))
			}
			got := wrapped.Validate(tt.obj)
			if !reflect.DeepEqual(errorStrings(got), errorStrings(want)) || got.IsValid() != want.IsValid() {
				t.Fatalf("Validate = %v, full validator %v", errorStrings(got), errorStrings(want))
			}
			gotUpdate := wrapped.ValidateUpdate(tt.obj, resultObject(validSpec()))
			wantUpdate := full.ValidateUpdate(tt.obj, resultObject(validSpec()))
			if gotUpdate.IsValid() != wantUpdate.IsValid() {
				t.Fatalf("ValidateUpdate valid=%v, full validator %v", gotUpdate.IsValid(), wantUpdate.IsValid())
			}
		})
	}
	if !fast.conforms(resultObject(validSpec())) {
		t.Fatal("a complete result does not take the fast path")
	}
}

// Schemas with anything the fast check does not verify keep the full
// validator alone.
func TestFastSchemaRefusesWhatItDoesNotCheck(t *testing.T) {
	str := apiextensions.JSONSchemaProps{Type: "string"}
	max := int64(3)
	tests := map[string]apiextensions.JSONSchemaProps{
		"pattern":        {Type: "string", Pattern: "^a"},
		"enum":           {Type: "string", Enum: []apiextensions.JSON{"a"}},
		"max length":     {Type: "string", MaxLength: &max},
		"other format":   {Type: "string", Format: "uri"},
		"array":          {Type: "array", Items: &apiextensions.JSONSchemaPropsOrArray{Schema: &str}},
		"map":            {Type: "object", AdditionalProperties: &apiextensions.JSONSchemaPropsOrBool{Schema: &str}},
		"preserve":       {Type: "object", XPreserveUnknownFields: ptr(true)},
		"nullable":       {Type: "string", Nullable: true},
		"cel":            {Type: "object", XValidations: apiextensions.ValidationRules{{Rule: "true"}}},
		"int-or-string":  {XIntOrString: true},
		"nested pattern": {Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{"a": {Type: "string", Pattern: "x"}}},
	}
	for name, s := range tests {
		if compileFastSchema(&s) != nil {
			t.Errorf("%s: compiled a fast check", name)
		}
	}
	if _, ok := withFastSchema(installedSchema(t, "workqueues.batchlet.dev"), basicValidator(t)).(fastSchemaValidator); ok {
		t.Log("the WorkQueue schema takes the fast path too")
	}
}

func ptr[T any](v T) *T { return &v }

func basicValidator(t testing.TB) apiservervalidation.SchemaValidator {
	v, _, err := apiservervalidation.NewSchemaValidator(&apiextensions.JSONSchemaProps{Type: "object"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// go test ./apiserver/registry -run XXX -bench ContainerResultValidation
func BenchmarkContainerResultValidation(b *testing.B) {
	props := installedSchema(b, "containerresults.results.batchlet.dev")
	full, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		b.Fatal(err)
	}
	obj := resultObject(validSpec())
	for name, v := range map[string]apiservervalidation.SchemaValidator{"full": full, "fast": withFastSchema(props, full)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := v.Validate(obj); !r.IsValid() {
					b.Fatal(fmt.Sprint(errorStrings(r)))
				}
			}
		})
	}
}

// The date-time shortcut accepts only what strfmt accepts, and the forms
// metav1.Time writes.
func TestSecondsDateTimeAgreesWithStrfmt(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"2026-11-26T10:00:00Z", true},
		{"2024-02-29T23:59:59Z", true},
		{"2026-02-29T10:00:00Z", false},
		{"2026-13-01T10:00:00Z", false},
		{"2026-11-26T24:00:00Z", false},
		{"2026-11-26T23:60:00Z", false},
		{"2026-11-26T23:00:60Z", false},
		{"2026-11-26t10:00:00z", false}, // strfmt accepts; left to it
		{"2026-11-26T10:00:00.5Z", false},
		{"2026-11-26T1a:00:00Z", false},
		{"2026-1a-26T10:00:00Z", false},
		{"", false},
	}
	for _, tt := range tests {
		got := isSecondsDateTime(tt.s)
		if got != tt.want {
			t.Errorf("isSecondsDateTime(%q) = %v, want %v", tt.s, got, tt.want)
		}
		if got && !strfmt.IsDateTime(tt.s) {
			t.Errorf("isSecondsDateTime(%q) accepts what strfmt refuses", tt.s)
		}
	}
}
