package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	utilproto "k8s.io/kube-openapi/pkg/util/proto"
)

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	if err := Install(mux); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestV2ProtobufAsKubectlReadsIt fetches /openapi/v2 the way kubectl does
// and parses it with the model parser kubectl's validation uses.
func TestV2ProtobufAsKubectlReadsIt(t *testing.T) {
	srv := newTestServer(t)
	resp, body := get(t, srv.URL+V2Path, map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Errorf("Content-Type = %q", got)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(body, doc); err != nil {
		t.Fatalf("unmarshal v2 protobuf: %v", err)
	}
	models, err := utilproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kubectl's parser rejects the v2 document: %v", err)
	}
	job, ok := models.LookupModel("io.k8s.api.batch.v1.JobSpec").(*utilproto.Kind)
	if !ok {
		t.Fatal("JobSpec model missing or not a kind")
	}
	if got := job.Fields["backoffLimit"].GetDescription(); got != backoffLimitDescription {
		t.Errorf("backoffLimit description = %q", got)
	}
	if models.LookupModel("io.k8s.sigs.jobset.api.jobset.v1alpha2.JobSetSpec") == nil {
		t.Error("JobSetSpec model missing")
	}
}

func TestV2JSONAndETag(t *testing.T) {
	srv := newTestServer(t)
	resp, body := get(t, srv.URL+V2Path, map[string]string{"Accept": "application/json"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("decode v2 JSON: %v", err)
	}
	if string(doc["swagger"]) != `"2.0"` {
		t.Errorf("swagger = %s", doc["swagger"])
	}
	etag := resp.Header.Get("Etag")
	if etag != strconv.Quote(computeETag(body)) {
		t.Errorf("Etag = %s, want the quoted SHA-512 of the body", etag)
	}
	resp, _ = get(t, srv.URL+V2Path, map[string]string{"Accept": "application/json", "If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("conditional GET status = %d, want 304", resp.StatusCode)
	}
	resp, _ = get(t, srv.URL+V2Path, map[string]string{"Accept": "text/html"})
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("text/html status = %d, want 406", resp.StatusCode)
	}
}

func TestV3DiscoveryAndHashedURLs(t *testing.T) {
	srv := newTestServer(t)
	resp, body := get(t, srv.URL+V3Path, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var index discoveryIndex
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatal(err)
	}
	batch, found := index.Paths["apis/batch/v1"]
	if !found {
		t.Fatalf("discovery lacks apis/batch/v1: %s", body)
	}
	for _, key := range []string{"api/v1", "apis/jobset.x-k8s.io/v1alpha2", "apis/events.k8s.io/v1", "apis/coordination.k8s.io/v1"} {
		if _, found := index.Paths[key]; !found {
			t.Errorf("discovery lacks %s", key)
		}
	}
	if !strings.HasPrefix(batch.ServerRelativeURL, "/openapi/v3/apis/batch/v1?hash=") {
		t.Fatalf("serverRelativeURL = %q", batch.ServerRelativeURL)
	}

	resp, body = get(t, srv.URL+batch.ServerRelativeURL, map[string]string{"Accept": "application/json"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s status = %d", batch.ServerRelativeURL, resp.StatusCode)
	}
	if got := resp.Header.Get("Cache-Control"); got != "public, immutable" {
		t.Errorf("Cache-Control = %q", got)
	}
	if !strings.HasSuffix(batch.ServerRelativeURL, "hash="+computeETag(body)) {
		t.Errorf("hash in %s is not the document's SHA-512", batch.ServerRelativeURL)
	}

	resp, _ = get(t, srv.URL+"/openapi/v3/apis/batch/v1?hash=stale", nil)
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != batch.ServerRelativeURL {
		t.Errorf("stale hash: status %d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = get(t, srv.URL+"/openapi/v3/apis/apps/v1", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group version status = %d", resp.StatusCode)
	}
	resp, _ = get(t, srv.URL+"/openapi/v3/apis/batch/v1", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" {
		t.Errorf("v3 protobuf: status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestClientGoOpenAPIV3Root reads the documents through client-go's
// openapi3 root, which kubectl explain and kubectl's field validation
// check use.
func TestClientGoOpenAPIV3Root(t *testing.T) {
	srv := newTestServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(gvs) != 12 {
		t.Errorf("group versions = %v", gvs)
	}
	for _, gv := range []schema.GroupVersion{{Version: "v1"}, {Group: "batch", Version: "v1"}, {Group: "jobset.x-k8s.io", Version: "v1alpha2"}} {
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("GVSpec(%v): %v", gv, err)
		}
		if doc.Paths == nil || len(doc.Paths.Paths) == 0 || len(doc.Components.Schemas) == 0 {
			t.Errorf("GVSpec(%v) is empty", gv)
		}
	}
	doc, err := root.GVSpec(schema.GroupVersion{Group: "batch", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	got := doc.Components.Schemas["io.k8s.api.batch.v1.JobSpec"].Properties["backoffLimit"].Description
	if got != backoffLimitDescription {
		t.Errorf("backoffLimit description via client-go = %q", got)
	}
}
