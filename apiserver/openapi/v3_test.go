package openapi

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/openapi/internal/build"
)

// patchOps returns the PATCH operations of doc whose GVK extension is gvk.
func patchOps(doc v3Doc, gvk map[string]string) map[string]*operation {
	out := map[string]*operation{}
	for path, item := range doc.Paths {
		op := item.Patch
		if op != nil && op.GVK["group"] == gvk["group"] && op.GVK["version"] == gvk["version"] && op.GVK["kind"] == gvk["kind"] {
			out[path] = op
		}
	}
	return out
}

func hasParam(op *operation, name string) bool {
	for _, p := range op.Parameters {
		if p["name"] == name {
			return true
		}
	}
	return false
}

// TestV3PatchOperationsAdvertiseFieldValidation mirrors kubectl 1.32's
// server-side field validation check: in the group version's v3 document,
// a PATCH operation tagged with the kind's GVK lists a "fieldValidation"
// operation parameter. kubectl stops at the first such operation, in map
// order, so every one of them must have it.
func TestV3PatchOperationsAdvertiseFieldValidation(t *testing.T) {
	cases := []struct {
		doc string
		gvk map[string]string
	}{
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Pod"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Namespace"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Node"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Secret"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Service"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "ServiceAccount"}},
		{"api/v1", map[string]string{"group": "", "version": "v1", "kind": "Event"}},
		{"apis/events.k8s.io/v1", map[string]string{"group": "events.k8s.io", "version": "v1", "kind": "Event"}},
		{"apis/coordination.k8s.io/v1", map[string]string{"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}},
		{"apis/batch/v1", map[string]string{"group": "batch", "version": "v1", "kind": "Job"}},
		{"apis/jobset.x-k8s.io/v1alpha2", map[string]string{"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"}},
		{"apis/policy/v1", map[string]string{"group": "policy", "version": "v1", "kind": "PodDisruptionBudget"}},
		{"apis/apiextensions.k8s.io/v1", map[string]string{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"}},
	}
	for _, tc := range cases {
		doc := readV3(t, tc.doc)
		ops := patchOps(doc, tc.gvk)
		if len(ops) == 0 {
			t.Errorf("%s: no PATCH operation for %v", tc.doc, tc.gvk)
		}
		for path, op := range ops {
			if !hasParam(op, "fieldValidation") {
				t.Errorf("%s %s: PATCH lacks fieldValidation", tc.doc, path)
			}
			if op.Action != "patch" {
				t.Errorf("%s %s: x-kubernetes-action = %q", tc.doc, path, op.Action)
			}
		}
	}
}

func TestV3JobDocument(t *testing.T) {
	doc := readV3(t, "apis/batch/v1")
	spec := doc.Components.Schemas["io.k8s.api.batch.v1.JobSpec"]
	if got := spec.Properties["backoffLimit"].Description; got != backoffLimitDescription {
		t.Errorf("backoffLimit description = %q", got)
	}
	if !hasGVK(doc.Components.Schemas["io.k8s.api.batch.v1.Job"].GVK, servedKinds["io.k8s.api.batch.v1.Job"]) {
		t.Errorf("Job schema lacks its GVK")
	}
	item := doc.Paths["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]
	if item.Get == nil || item.Put == nil || item.Patch == nil || item.Delete == nil {
		t.Fatalf("job item path lacks operations: %+v", item)
	}
	if got := item.Patch.OperationID; got != "patchBatchV1NamespacedJob" {
		t.Errorf("patch operationId = %q", got)
	}
	status := doc.Paths["/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status"]
	if status.Patch == nil || status.Patch.GVK["kind"] != "Job" {
		t.Errorf("job status PATCH missing or not tagged Job: %+v", status.Patch)
	}
}

func TestV3JobSetDocument(t *testing.T) {
	doc := readV3(t, "apis/jobset.x-k8s.io/v1alpha2")
	js := doc.Components.Schemas["io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSet"]
	if !hasGVK(js.GVK, servedKinds["io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSet"]) {
		t.Errorf("JobSet GVK = %v", js.GVK)
	}
	// The JobSet types refer to batch/v1 by Go name; the combined
	// definitions must resolve them to the generated Kubernetes schemas.
	if _, found := doc.Components.Schemas["io.k8s.api.batch.v1.JobTemplateSpec"]; !found {
		t.Errorf("JobTemplateSpec (referenced by ReplicatedJob) missing")
	}
	if _, found := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]; !found {
		t.Errorf("PodSpec missing")
	}
	patch := doc.Paths["/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/{name}"].Patch
	if patch == nil {
		t.Fatal("jobset PATCH missing")
	}
	if patch.OperationID != "patchJobsetXK8sIoV1alpha2NamespacedJobSet" {
		t.Errorf("operationId = %q", patch.OperationID)
	}
}

func TestV3PodSubresources(t *testing.T) {
	doc := readV3(t, "api/v1")
	eviction := doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"].Post
	if eviction == nil || eviction.GVK["group"] != "policy" || eviction.GVK["kind"] != "Eviction" {
		t.Errorf("eviction POST = %+v", eviction)
	}
	for _, sub := range []string{"binding", "log", "exec", "status"} {
		if _, found := doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}/"+sub]; !found {
			t.Errorf("pods/%s path missing", sub)
		}
	}
	if _, found := doc.Paths["/api/v1/pods"]; !found {
		t.Errorf("list pods for all namespaces missing")
	}
	if _, found := doc.Paths["/api/v1/nodes/{name}/status"]; !found {
		t.Errorf("nodes/status missing")
	}
}

func TestV3DocumentsPerGroupVersion(t *testing.T) {
	want := []string{"api/v1", "apis/apiextensions.k8s.io/v1", "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/batch/v1", "apis/certificates.k8s.io/v1", "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/events.k8s.io/v1", "apis/jobset.x-k8s.io/v1alpha2", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1"}
	got := newTestService(t).GroupVersions()
	if len(got) != len(want) {
		t.Fatalf("group versions = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group versions = %v, want %v", got, want)
		}
	}
	v3, err := build.V3()
	if err != nil {
		t.Fatal(err)
	}
	for key, doc := range v3 {
		for path := range doc.Paths.Paths {
			if len(path) < len(key)+1 || path[1:len(key)+1] != key {
				t.Errorf("document %s holds foreign path %s", key, path)
			}
		}
	}
}
