package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

const jobSetJSON = `{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js","namespace":"ns"},
"spec":{"failurePolicy":{"maxRestarts":1,"rules":[{"action":"FailJobSet","onJobFailureReasons":["PodFailurePolicy"]}]},
"replicatedJobs":[{"name":"workers","template":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}]}}`

func post(t *testing.T, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	srv := httptest.NewServer(Handler(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	body, _ := json.Marshal(admissionv1.AdmissionReview{Request: req})
	resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != req.UID {
		t.Fatalf("response %+v does not answer request %s", out.Response, req.UID)
	}
	return out.Response
}

// mutated sends raw through the mutating handler and applies its patch, as
// the API server does before validation.
func mutated(t *testing.T, raw string) []byte {
	t.Helper()
	resp := post(t, MutateJobSetPath, &admissionv1.AdmissionRequest{UID: types.UID("m"), Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}})
	if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response = %+v, want allowed with a JSON patch", resp)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMutateNamesFailurePolicyRulesAndDefaults(t *testing.T) {
	out := mutated(t, jobSetJSON)
	var js struct {
		Metadata map[string]any `json:"metadata"`
		Spec     struct {
			FailurePolicy struct {
				RestartStrategy string `json:"restartStrategy"`
				Rules           []struct {
					Name string `json:"name"`
				} `json:"rules"`
			} `json:"failurePolicy"`
			SuccessPolicy struct {
				Operator string `json:"operator"`
			} `json:"successPolicy"`
			ReplicatedJobs []struct {
				Replicas int `json:"replicas"`
			} `json:"replicatedJobs"`
		} `json:"spec"`
		Status any `json:"status"`
	}
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatal(err)
	}
	if got := js.Spec.FailurePolicy.Rules[0].Name; got != "failurePolicyRule0" {
		t.Errorf("rule name = %q, want failurePolicyRule0", got)
	}
	if js.Spec.FailurePolicy.RestartStrategy != "Recreate" || js.Spec.SuccessPolicy.Operator != "All" || js.Spec.ReplicatedJobs[0].Replicas != 1 {
		t.Errorf("defaults: restartStrategy %q successPolicy %q replicas %d, want Recreate All 1",
			js.Spec.FailurePolicy.RestartStrategy, js.Spec.SuccessPolicy.Operator, js.Spec.ReplicatedJobs[0].Replicas)
	}
	if js.Status != nil || len(js.Metadata) != 2 {
		t.Errorf("the patch touched metadata or status: %s", out)
	}
}

func TestValidateCreate(t *testing.T) {
	resp := post(t, ValidateJobSetPath, &admissionv1.AdmissionRequest{UID: "ok", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: mutated(t, jobSetJSON)}})
	if !resp.Allowed {
		t.Fatalf("a valid JobSet was denied: %+v", resp.Result)
	}
	bad := strings.Replace(jobSetJSON, `"onJobFailureReasons":["PodFailurePolicy"]`, `"onJobFailureReasons":["PodFailurePolicy"],"targetReplicatedJobs":["nope"]`, 1)
	resp = post(t, ValidateJobSetPath, &admissionv1.AdmissionRequest{UID: "bad", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: mutated(t, bad)}})
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "nope") || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Fatalf("response = %+v, want a 422 denial naming the unknown replicatedJob", resp.Result)
	}
}

func TestValidateUpdateRefusesChangedFailurePolicy(t *testing.T) {
	changed := strings.Replace(jobSetJSON, `"maxRestarts":1`, `"maxRestarts":2`, 1)
	resp := post(t, ValidateJobSetPath, &admissionv1.AdmissionRequest{UID: "upd", Operation: admissionv1.Update,
		Object: runtime.RawExtension{Raw: []byte(changed)}, OldObject: runtime.RawExtension{Raw: []byte(jobSetJSON)}})
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.failurePolicy: Invalid value") {
		t.Fatalf("response = %+v, want failurePolicy immutable", resp.Result)
	}
}

func TestRefusesMalformedReview(t *testing.T) {
	srv := httptest.NewServer(Handler(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	resp, err := http.Post(srv.URL+ValidateJobSetPath, "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
}
