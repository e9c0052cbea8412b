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

// decodeFresh, when it takes a value, gives what the strict JSON decoder
// gives; the values a status patch brings new (container statuses,
// conditions, IPs) are taken.
func TestDecodeFreshMatchesStrictDecoding(t *testing.T) {
	const running = `{"name":"main","state":{"running":{"startedAt":"2026-11-26T14:00:01Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"busybox","imageID":"","started":true}`
	const terminated = `{"name":"main","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-11-26T14:00:01Z","finishedAt":"2026-11-26T14:00:02Z","containerID":"sim://1"}},"lastState":{},"ready":false,"restartCount":0,"image":"busybox","imageID":"","started":false}`
	const cond = `{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-26T14:00:00Z","reason":null,"message":null}`
	cases := []struct {
		typ  reflect.Type
		raw  string
		take bool
	}{
		{reflect.TypeFor[[]corev1.ContainerStatus](), `[` + running + `]`, true},
		{reflect.TypeFor[[]corev1.ContainerStatus](), `[` + terminated + `,` + running + `]`, true},
		{reflect.TypeFor[[]corev1.ContainerStatus](), `[]`, true},
		{reflect.TypeFor[[]corev1.ContainerStatus](), `null`, true},
		{reflect.TypeFor[corev1.ContainerStatus](), running, true},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"name":"main","resources":{"limits":{"cpu":"1"}}}`, false}, // a map
		{reflect.TypeFor[corev1.ContainerStatus](), `{"name":"main","name":"other"}`, false},                     // repeated key
		{reflect.TypeFor[corev1.ContainerStatus](), `{"name":"main","Name":"other"}`, false},                     // unknown key (case)
		{reflect.TypeFor[corev1.ContainerStatus](), `{"name":"main","$patch":"replace"}`, false},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"name":"m\u0061in"}`, false},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"restartCount":1.5}`, false},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"restartCount":"1"}`, false},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"state":{"running":null,"waiting":{}}}`, true},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"state":{"terminated":{"exitCode":2147483648}}}`, false},
		{reflect.TypeFor[corev1.ContainerStatus](), `{"state":{"terminated":{"finishedAt":"yesterday"}}}`, false},
		{reflect.TypeFor[corev1.PodCondition](), cond, true},
		{reflect.TypeFor[[]corev1.PodCondition](), `[` + cond + `,` + cond + `]`, true},
		{reflect.TypeFor[[]corev1.PodIP](), `[{"ip":"10.0.0.1"},{"ip":"fd00::1"}]`, true},
		{reflect.TypeFor[[]corev1.HostIP](), `[]`, true},
		{reflect.TypeFor[[]string](), `["a","b"]`, true},
		{reflect.TypeFor[[]byte](), `"AAE="`, false},
		{reflect.TypeFor[[]byte](), `[0,1]`, false},
		{reflect.TypeFor[*corev1.ContainerStateTerminated](), `{}`, true},
		{reflect.TypeFor[*metav1.Time](), `"2026-11-26T14:00:00Z"`, true},
		{reflect.TypeFor[corev1.PodStatus](), `{"phase":"Running","conditions":[` + cond + `],"containerStatuses":[` + running + `],"podIPs":[{"ip":"127.0.0.1"}],"startTime":"2026-11-26T14:00:00Z","qosClass":"BestEffort"}`, true},
		{reflect.TypeFor[corev1.PodStatus](), `{"resize":"Proposed","resourceClaimStatuses":[{"name":"a","resourceClaimName":null}]}`, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v %s", tc.typ, tc.raw), func(t *testing.T) {
			got := reflect.New(tc.typ).Elem()
			took := decodeFresh(got, json.RawMessage(tc.raw))
			if took != tc.take {
				t.Fatalf("took %v, want %v", took, tc.take)
			}
			if !took {
				return
			}
			want := reflect.New(tc.typ)
			if strictErrs, err := kjson.UnmarshalStrict([]byte(tc.raw), want.Interface()); err != nil || len(strictErrs) > 0 {
				t.Fatalf("took it, the strict decoder refuses it: %v %v", err, strictErrs)
			}
			if !reflect.DeepEqual(got.Interface(), want.Elem().Interface()) {
				t.Fatalf("got %#v, want %#v", got.Interface(), want.Elem().Interface())
			}
		})
	}
}
