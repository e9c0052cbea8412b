package patch

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Whatever valid JSON patch (handlePatch refuses the rest first) the typed merge takes, the general path (strategic merge
// of the JSON, strict decode) takes too, with the same result; and the
// current object is never changed. Run longer with
// `go test -fuzz FuzzTypedStrategicPatch ./apiserver/patch/`.
func FuzzTypedStrategicPatch(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`,
		`{"metadata":{"uid":"u1"},"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","reason":"PodCompleted","message":null}],"containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":0}},"ready":false,"restartCount":0,"image":"busybox","imageID":"id"}]}}`,
		`{"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"PodScheduled"}],"conditions":[{"type":"Ready","status":"True"}]}}`,
		`{"metadata":{"labels":{"a":null,"c":"3"},"finalizers":["x"]}}`,
		`{"status":{"podIPs":[{"ip":"10.1.0.1"},{"ip":"fd00::1"}],"hostIPs":[]}}`,
		`{"spec":{"containers":[{"name":"main","image":"other"}],"activeDeadlineSeconds":60}}`,
		"{\n \"status\" : { \"message\" : \"a\\\"b\\u00e9\" } }",
		`{"":{}}`, // the inline TypeMeta's empty JSON name is no field
		`{"status":{"conditions":[{"type":{}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	res := registry.Pods()
	f.Fuzz(func(t *testing.T, patch []byte) {
		if !json.Valid(patch) {
			return
		}
		cur := richPod()
		before := cur.DeepCopy()
		got, ok, panicked := tryStrategicPatchObject(res, cur, patch)
		if panicked {
			// apimachinery's strategic merge panics on some malformed
			// patches (a map as a merge key); the handler answers 500, as
			// upstream's panic filter does.
			return
		}
		if !equality.Semantic.DeepEqual(cur, before) {
			t.Fatal("patching changed the current object")
		}
		if !ok {
			return
		}
		orig, err := json.Marshal(before)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := strategicpatch.StrategicMergePatch(orig, patch, &corev1.Pod{})
		if err != nil {
			t.Fatalf("typed path took %q, JSON path fails: %v", patch, err)
		}
		want := &corev1.Pod{}
		strictErrs, err := strictDecodePod(patched, want)
		if err != nil || len(strictErrs) > 0 {
			t.Fatalf("typed path took %q, JSON path reports %v %v", patch, err, strictErrs)
		}
		want.ResourceVersion = ""
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Fatalf("patch %q:\n got %s\nwant %s", patch, gotJSON, wantJSON)
		}
	})
}

func tryStrategicPatchObject(res *registry.Resource, cur runtime.Object, patch []byte) (obj runtime.Object, ok, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	obj, ok = strategicPatchObject(res, cur, patch)
	return obj, ok, false
}
