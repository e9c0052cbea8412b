package patch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// decodeScalar, when it takes a value, gives what the strict JSON decoder
// (decodeTyped's general way, the oracle) gives for every field type of a
// status patch; what it leaves, the decoder decides.
func TestDecodeScalarMatchesStrictDecoding(t *testing.T) {
	types := []reflect.Type{
		reflect.TypeFor[string](), reflect.TypeFor[*string](), reflect.TypeFor[corev1.PodPhase](),
		reflect.TypeFor[bool](), reflect.TypeFor[*bool](),
		reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int32](), reflect.TypeFor[*int32](), reflect.TypeFor[int64](), reflect.TypeFor[*int64](),
		reflect.TypeFor[uint32](), reflect.TypeFor[float64](),
		reflect.TypeFor[metav1.Time](), reflect.TypeFor[*metav1.Time](), reflect.TypeFor[metav1.MicroTime](),
		reflect.TypeFor[corev1.ContainerState](), reflect.TypeFor[[]string](),
	}
	raws := []string{
		`""`, `"a"`, `"Running"`, `"a\"b"`, `"\u00e9"`, `"é"`, `"tab\there"`, `"true"`, `"1"`,
		`true`, `false`, `null`,
		`0`, `-0`, `1`, `-1`, `127`, `128`, `-128`, `-129`, `2147483647`, `2147483648`, `-2147483648`, `-2147483649`,
		`9223372036854775807`, `9223372036854775808`, `1.0`, `1e2`, `1E2`, `-1.5`, `0.0`,
		`"2026-11-26T14:00:00Z"`, `"2026-11-26T14:00:00+02:00"`, `"2026-11-26T14:00:00.123456789Z"`, `"2026-11-26 14:00:00Z"`,
		`"2026-11-26T14:00:00z"`, `"2026-13-26T14:00:00Z"`, `"2026-11-26"`, `"2026-11-26T14:00:00\u005a"`, `"0001-01-01T00:00:00Z"`,
		`{}`, `[]`, `["a"]`, `{"running":{}}`,
	}
	taken := 0
	for _, typ := range types {
		for _, raw := range raws {
			t.Run(fmt.Sprintf("%v %s", typ, raw), func(t *testing.T) {
				got := reflect.New(typ).Elem()
				if !decodeScalar(got, json.RawMessage(raw)) {
					if !got.IsZero() {
						t.Fatalf("left %v after declining", got)
					}
					return
				}
				taken++
				want := reflect.New(typ)
				if strictErrs, err := kjson.UnmarshalStrict([]byte(raw), want.Interface()); err != nil || len(strictErrs) > 0 {
					t.Fatalf("took %s, the strict decoder refuses it: %v %v", raw, err, strictErrs)
				}
				gotJSON, _ := json.Marshal(got.Interface())
				wantJSON, _ := json.Marshal(want.Elem().Interface())
				if !reflect.DeepEqual(got.Interface(), want.Elem().Interface()) || string(gotJSON) != string(wantJSON) {
					t.Fatalf("got %#v (%s), want %#v (%s)", got.Interface(), gotJSON, want.Elem().Interface(), wantJSON)
				}
			})
		}
	}
	// The fast way must be the usual one: every string, boolean, integer
	// and time of a status patch.
	if taken != 119 {
		t.Errorf("decodeScalar took %d values, want 119", taken)
	}
}
