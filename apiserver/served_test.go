package apiserver

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServedTableDefinitions(t *testing.T) {
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	custom := func(crd string, gvr schema.GroupVersionResource) *registry.Resource {
		return &registry.Resource{GVR: gvr, Kind: "K", CustomResource: true, Definition: crd}
	}
	jobs := &registry.Resource{GVR: gvr("batch", "v1", "jobs"), Kind: "Job"}
	table := newServedTable([]*registry.Resource{jobs})

	v1, v2 := gvr("g.io", "v1", "widgets"), gvr("g.io", "v2", "widgets")
	table.setDefinition("widgets.g.io", "5", []*registry.Resource{custom("widgets.g.io", v1), custom("widgets.g.io", v2)})
	if table.get(v1) == nil || table.get(v2) == nil || table.servedFrom("widgets.g.io") != "5" {
		t.Fatal("both versions of widgets.g.io should be served, built from 5")
	}
	// A new version of the CRD replaces its resources: v2 no longer served.
	table.setDefinition("widgets.g.io", "6", []*registry.Resource{custom("widgets.g.io", v1)})
	if table.get(v1) == nil || table.get(v2) != nil || table.servedFrom("widgets.g.io") != "6" {
		t.Fatal("after the update only v1 should be served, built from 6")
	}
	// Another owner cannot take a served GVR, not even a built-in one.
	table.setDefinition("jobs.batch", "7", []*registry.Resource{custom("jobs.batch", jobs.GVR)})
	if got := table.get(jobs.GVR); got != jobs {
		t.Fatalf("built-in jobs replaced by %+v", got)
	}
	table.setTerminating("widgets.g.io")
	if !table.isTerminating("widgets.g.io") {
		t.Fatal("widgets.g.io should be terminating")
	}
	// Forgetting the CRD stops serving it and clears its state.
	table.setDefinition("widgets.g.io", "", nil)
	if table.get(v1) != nil || table.isTerminating("widgets.g.io") || table.servedFrom("widgets.g.io") != "" || len(table.definitions()) != 0 {
		t.Fatalf("widgets.g.io still known: definitions %v", table.definitions())
	}
	if len(table.list()) != 1 || table.forKind(jobs.GVK()) != jobs {
		t.Fatal("built-in jobs should be the only resource left")
	}
}
