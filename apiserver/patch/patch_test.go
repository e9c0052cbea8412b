package patch

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"
)

// Check refuses the patch types a resource does not take with upstream's
// 415 and message.
func TestCheck(t *testing.T) {
	jobsets := registry.JobSets()
	cases := map[string]struct {
		res     *registry.Resource
		pt      types.PatchType
		wantMsg string
	}{
		"pod, strategic":    {res: registry.Pods(), pt: types.StrategicMergePatchType},
		"pod, apply":        {res: registry.Pods(), pt: types.ApplyPatchType},
		"jobset, merge":     {res: jobsets, pt: types.MergePatchType},
		"jobset, strategic": {res: jobsets, pt: types.StrategicMergePatchType, wantMsg: "strategic merge patch format is not supported (patch jobsets.jobset.x-k8s.io x)"},
		"pod, unknown": {res: registry.Pods(), pt: "text/plain",
			wantMsg: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (patch pods x)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Check(tc.res, tc.pt, "x")
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != http.StatusUnsupportedMediaType || status.Status().Message != tc.wantMsg {
				t.Fatalf("Check: %v, want 415 %q", err, tc.wantMsg)
			}
		})
	}
}

// Parse refuses invalid JSON and JSON patches that are no list of
// operations with 400.
func TestParse(t *testing.T) {
	cases := map[string]struct {
		pt      types.PatchType
		data    string
		wantErr string
	}{
		"merge":              {pt: types.MergePatchType, data: `{"a":1}`},
		"invalid JSON":       {pt: types.MergePatchType, data: `{`, wantErr: "error decoding patch: invalid JSON"},
		"json patch":         {pt: types.JSONPatchType, data: `[{"op":"add","path":"/a","value":1}]`},
		"json patch, object": {pt: types.JSONPatchType, data: `{"op":"add"}`, wantErr: "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.pt, []byte(tc.data))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.wantErr != "" && (!apierrors.IsBadRequest(err) || err.Error() != tc.wantErr):
				t.Fatalf("Parse: %v, want 400 %q", err, tc.wantErr)
			}
		})
	}
}

// Apply patches through the codec's JSON unless the typed merge takes the
// patch, and keeps a resourceVersion only as a precondition.
func TestApply(t *testing.T) {
	cur := richPod()
	decode := func(data []byte, into runtime.Object) error {
		_, err := kjson.UnmarshalStrict(data, into)
		return err
	}
	cases := map[string]struct {
		pt        types.PatchType
		data      string
		wantJSON  bool // the codec's JSON was read
		wantPhase corev1.PodPhase
		wantRV    string
	}{
		"strategic, typed":   {pt: types.StrategicMergePatchType, data: `{"status":{"phase":"Failed"}}`, wantPhase: corev1.PodFailed},
		"strategic, general": {pt: types.StrategicMergePatchType, data: `{"status":{"phase":"Running","phase":"Failed"}}`, wantJSON: true, wantPhase: corev1.PodFailed},
		"merge":              {pt: types.MergePatchType, data: `{"status":{"phase":"Failed"}}`, wantJSON: true, wantPhase: corev1.PodFailed},
		"json":               {pt: types.JSONPatchType, data: `[{"op":"replace","path":"/status/phase","value":"Failed"}]`, wantJSON: true, wantPhase: corev1.PodFailed},
		"merge, precondition": {pt: types.MergePatchType, data: `{"metadata":{"resourceVersion":"6"}}`, wantJSON: true,
			wantPhase: corev1.PodRunning, wantRV: "6"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(tc.pt, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			readJSON := false
			codec := Codec{
				CurrentJSON: func(cur runtime.Object) ([]byte, error) { readJSON = true; return json.Marshal(cur) },
				Decode:      decode,
			}
			got, err := Apply(registry.Pods(), p, cur, codec)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			pod := got.(*corev1.Pod)
			if readJSON != tc.wantJSON || pod.Status.Phase != tc.wantPhase || pod.ResourceVersion != tc.wantRV {
				t.Fatalf("read JSON %v phase %s rv %q, want %v %s %q", readJSON, pod.Status.Phase, pod.ResourceVersion, tc.wantJSON, tc.wantPhase, tc.wantRV)
			}
			if cur.Status.Phase != corev1.PodRunning {
				t.Fatal("Apply changed the current object")
			}
		})
	}
}
