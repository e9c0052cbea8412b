package discovery

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsPath(t *testing.T) {
	tests := map[string]bool{
		"/api": true, "/api/": true, "/api/v1": true, "/apis": true, "/apis/batch": true, "/apis/batch/v1": true,
		"/apis/batch/v1/jobs": false, "/api/v1/pods": false, "/metrics": false, "/openapi/v3": false,
	}
	for path, want := range tests {
		if got := IsPath(path); got != want {
			t.Errorf("IsPath(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestServeFollowsTheTable: a group version a CRD starts serving appears
// in discovery, and goes when the CRD does.
func TestServeFollowsTheTable(t *testing.T) {
	table := registry.NewTable(registry.All())
	h := &Handler{Served: table}
	widgets := &registry.Resource{GVR: schema.GroupVersionResource{Group: "g.io", Version: "v1", Resource: "widgets"},
		Kind: "Widget", Singular: "widget", Namespaced: true, CustomResource: true, Definition: "widgets.g.io"}
	get := func(path string) (int, *metav1.APIResourceList) {
		rec := httptest.NewRecorder()
		if !h.Serve(rec, httptest.NewRequest("GET", path, nil)) {
			return 404, nil
		}
		var list metav1.APIResourceList
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		return rec.Code, &list
	}
	if code, _ := get("/apis/g.io/v1"); code != 404 {
		t.Fatalf("/apis/g.io/v1 before the CRD: %d, want 404", code)
	}
	table.SetDefinition("widgets.g.io", "1", []*registry.Resource{widgets})
	code, list := get("/apis/g.io/v1")
	if code != 200 || len(list.APIResources) != 1 || list.APIResources[0].Name != "widgets" || list.APIResources[0].Kind != "Widget" {
		t.Fatalf("/apis/g.io/v1 = %d %+v, want widgets", code, list)
	}
	table.SetDefinition("widgets.g.io", "", nil)
	if code, _ := get("/apis/g.io/v1"); code != 404 {
		t.Fatalf("/apis/g.io/v1 after the CRD: %d, want 404", code)
	}
}
