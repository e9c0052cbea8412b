package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/batchlet/batchlet/apiserver/defaults"
	"github.com/batchlet/batchlet/apiserver/validation"
)

// Paths of the handlers, as upstream JobSet's manager serves them.
const (
	MutateJobSetPath   = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	ValidateJobSetPath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
	// maxReviewBytes bounds a request body; the API server sends objects of
	// at most a few MiB.
	maxReviewBytes = 8 << 20
)

// Handler returns the JobSet admission handlers.
func Handler(log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(MutateJobSetPath, reviewHandler(log, mutateJobSet))
	mux.Handle(ValidateJobSetPath, reviewHandler(log, validateJobSet))
	return mux
}

// review answers one admission request.
type review func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// reviewHandler decodes an AdmissionReview, answers it with fn and writes the
// review back with the request's UID.
func reviewHandler(log *slog.Logger, fn review) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
		if err != nil || len(body) > maxReviewBytes {
			http.Error(w, "reading the admission review failed or it is too large", http.StatusBadRequest)
			return
		}
		var in admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("decoding the admission review: %v", err), http.StatusBadRequest)
			return
		}
		resp := fn(in.Request)
		resp.UID = in.Request.UID
		if !resp.Allowed {
			log.Info("admission denied", "namespace", in.Request.Namespace, "name", in.Request.Name,
				"operation", in.Request.Operation, "reason", resp.Result.Message)
		}
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&out)
	})
}

// mutateJobSet applies batchlet's JobSet defaults and answers with the JSON
// patch from the object as sent to the defaulted one.
func mutateJobSet(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	raw := req.Object.Raw
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return deny(http.StatusBadRequest, fmt.Sprintf("decoding the JobSet: %v", err))
	}
	defaults.JobSetUnstructured(obj)
	js := &jobsetv1alpha2.JobSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, js); err != nil {
		return deny(http.StatusBadRequest, fmt.Sprintf("decoding the JobSet: %v", err))
	}
	defaults.JobSet(js)
	defaulted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(js)
	if err != nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("encoding the defaulted JobSet: %v", err))
	}
	// Only the spec is ours to default; the typed round trip would also add
	// empty metadata and status fields.
	obj["spec"] = defaulted["spec"]
	patched, err := json.Marshal(obj)
	if err != nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("encoding the defaulted JobSet: %v", err))
	}
	ops, err := jsonpatch.CreatePatch(raw, patched)
	if err != nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("computing the defaulting patch: %v", err))
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(ops) > 0 {
		patch, err := json.Marshal(ops)
		if err != nil {
			return deny(http.StatusInternalServerError, fmt.Sprintf("encoding the defaulting patch: %v", err))
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp
}

// validateJobSet refuses a JobSet that batchlet's API would refuse. The CRD's
// schema and CEL rules have run by then, so create checks the webhook's
// rules; update checks the update rules.
func validateJobSet(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var js, old jobsetv1alpha2.JobSet
	if err := json.Unmarshal(req.Object.Raw, &js); err != nil {
		return deny(http.StatusBadRequest, fmt.Sprintf("decoding the JobSet: %v", err))
	}
	var errs field.ErrorList
	switch req.Operation {
	case admissionv1.Create:
		errs = validation.ValidateJobSetWebhook(&js)
	case admissionv1.Update:
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return deny(http.StatusBadRequest, fmt.Sprintf("decoding the old JobSet: %v", err))
		}
		errs = validation.ValidateJobSetUpdate(&js, &old)
	}
	if len(errs) == 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return deny(http.StatusUnprocessableEntity, strings.Join(msgs, ", "))
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg, Reason: metav1.StatusReasonInvalid,
	}}
}
