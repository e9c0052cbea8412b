package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/openapi/internal/build"
)

// TestEmbeddedDocumentsUpToDate fails when the registry, the generated
// definitions or kube-openapi changed without hack/update-openapi.sh being run.
func TestEmbeddedDocumentsUpToDate(t *testing.T) {
	v2, err := build.V2()
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, "data/v2.json", v2)
	v3, err := build.V3()
	if err != nil {
		t.Fatal(err)
	}
	s := newTestService(t)
	if got, want := len(s.GroupVersions()), len(v3); got != want {
		t.Errorf("embedded %d v3 documents %v, built %d; run hack/update-openapi.sh", got, s.GroupVersions(), want)
	}
	for key, doc := range v3 {
		assertSameJSON(t, filepath.Join("data/v3", key+".json"), doc)
	}
}

func assertSameJSON(t *testing.T, file string, doc interface{}) {
	t.Helper()
	want, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale; run hack/update-openapi.sh", file)
	}
}

func newTestService(t *testing.T) *Service {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// docSchema, v2Doc and v3Doc are the parts of the documents the tests look at.
type docSchema struct {
	Description string                       `json:"description"`
	Properties  map[string]docSchema         `json:"properties"`
	GVK         []map[string]string          `json:"x-kubernetes-group-version-kind"`
	AllOf       []map[string]json.RawMessage `json:"allOf"`
}

type operation struct {
	OperationID string              `json:"operationId"`
	GVK         map[string]string   `json:"x-kubernetes-group-version-kind"`
	Action      string              `json:"x-kubernetes-action"`
	Parameters  []map[string]any    `json:"parameters"`
	Consumes    []string            `json:"consumes"`
	Responses   map[string]struct{} `json:"responses"`
}

type pathItem struct {
	Get, Put, Post, Patch, Delete *operation
}

type v2Doc struct {
	Definitions map[string]docSchema      `json:"definitions"`
	Paths       map[string]pathItem       `json:"paths"`
	Parameters  map[string]map[string]any `json:"parameters"`
}

type v3Doc struct {
	Paths      map[string]pathItem `json:"paths"`
	Components struct {
		Schemas map[string]docSchema `json:"schemas"`
	} `json:"components"`
}

func readV2(t *testing.T) v2Doc {
	t.Helper()
	var doc v2Doc
	readJSON(t, "data/v2.json", &doc)
	return doc
}

func readV3(t *testing.T, key string) v3Doc {
	t.Helper()
	var doc v3Doc
	readJSON(t, filepath.Join("data/v3", key+".json"), &doc)
	return doc
}

func readJSON(t *testing.T, file string, into interface{}) {
	t.Helper()
	data, err := embedded.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
}

const backoffLimitDescription = "Specifies the number of retries before marking this job failed. Defaults to 6, unless backoffLimitPerIndex (only Indexed Job) is specified. When backoffLimitPerIndex is specified, backoffLimit defaults to 2147483647."

func TestV2HasUpstreamFieldDescriptions(t *testing.T) {
	doc := readV2(t)
	spec, found := doc.Definitions["io.k8s.api.batch.v1.JobSpec"]
	if !found {
		t.Fatal("io.k8s.api.batch.v1.JobSpec missing")
	}
	if got := spec.Properties["backoffLimit"].Description; got != backoffLimitDescription {
		t.Errorf("backoffLimit description = %q", got)
	}
	js, found := doc.Definitions["io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSetSpec"]
	if !found {
		t.Fatal("JobSetSpec missing")
	}
	if got := js.Properties["failurePolicy"].Description; !strings.Contains(got, "declare the JobSet as failed") {
		t.Errorf("jobset failurePolicy description = %q", got)
	}
	for _, name := range []string{
		"io.k8s.sigs.jobset.api.jobset.v1alpha2.FailurePolicyRule",
		"io.k8s.api.core.v1.PodSpec",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
		"io.k8s.api.policy.v1.Eviction",
		"io.k8s.api.events.v1.Event",
		"io.k8s.api.coordination.v1.Lease",
	} {
		if _, found := doc.Definitions[name]; !found {
			t.Errorf("definition %s missing", name)
		}
	}
}

// servedKinds are the kinds whose definitions must carry their GVK.
var servedKinds = map[string]map[string]string{
	"io.k8s.api.core.v1.Namespace":                       {"group": "", "version": "v1", "kind": "Namespace"},
	"io.k8s.api.core.v1.Pod":                             {"group": "", "version": "v1", "kind": "Pod"},
	"io.k8s.api.core.v1.PodList":                         {"group": "", "version": "v1", "kind": "PodList"},
	"io.k8s.api.core.v1.Node":                            {"group": "", "version": "v1", "kind": "Node"},
	"io.k8s.api.core.v1.Event":                           {"group": "", "version": "v1", "kind": "Event"},
	"io.k8s.api.core.v1.Service":                         {"group": "", "version": "v1", "kind": "Service"},
	"io.k8s.api.core.v1.ConfigMap":                       {"group": "", "version": "v1", "kind": "ConfigMap"},
	"io.k8s.api.core.v1.Secret":                          {"group": "", "version": "v1", "kind": "Secret"},
	"io.k8s.api.core.v1.ServiceAccount":                  {"group": "", "version": "v1", "kind": "ServiceAccount"},
	"io.k8s.api.events.v1.Event":                         {"group": "events.k8s.io", "version": "v1", "kind": "Event"},
	"io.k8s.api.coordination.v1.Lease":                   {"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"},
	"io.k8s.api.policy.v1.Eviction":                      {"group": "policy", "version": "v1", "kind": "Eviction"},
	"io.k8s.api.batch.v1.Job":                            {"group": "batch", "version": "v1", "kind": "Job"},
	"io.k8s.api.batch.v1.JobList":                        {"group": "batch", "version": "v1", "kind": "JobList"},
	"io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSet":      {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
	"io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSetList":  {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSetList"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Status":        {"group": "", "version": "v1", "kind": "Status"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {"group": "batch", "version": "v1", "kind": "DeleteOptions"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent":    {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "WatchEvent"},
}

func hasGVK(list []map[string]string, want map[string]string) bool {
	for _, gvk := range list {
		if gvk["group"] == want["group"] && gvk["version"] == want["version"] && gvk["kind"] == want["kind"] {
			return true
		}
	}
	return false
}

func TestV2DefinitionsCarryGVK(t *testing.T) {
	doc := readV2(t)
	for name, gvk := range servedKinds {
		if !hasGVK(doc.Definitions[name].GVK, gvk) {
			t.Errorf("%s: x-kubernetes-group-version-kind = %v, want it to include %v", name, doc.Definitions[name].GVK, gvk)
		}
	}
	if gvks := doc.Definitions["io.k8s.api.batch.v1.JobSpec"].GVK; len(gvks) != 0 {
		t.Errorf("JobSpec is not a kind but has GVKs %v", gvks)
	}
}
