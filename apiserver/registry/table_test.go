package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServedTableDefinitions(t *testing.T) {
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	custom := func(crd string, gvr schema.GroupVersionResource) *Resource {
		return &Resource{GVR: gvr, Kind: "K", CustomResource: true, Definition: crd}
	}
	jobs := &Resource{GVR: gvr("batch", "v1", "jobs"), Kind: "Job"}
	table := NewTable([]*Resource{jobs})

	v1, v2 := gvr("g.io", "v1", "widgets"), gvr("g.io", "v2", "widgets")
	table.SetDefinition("widgets.g.io", "5", []*Resource{custom("widgets.g.io", v1), custom("widgets.g.io", v2)})
	if table.Get(v1) == nil || table.Get(v2) == nil || table.ServedFrom("widgets.g.io") != "5" {
		t.Fatal("both versions of widgets.g.io should be served, built from 5")
	}
	// A new version of the CRD replaces its resources: v2 no longer served.
	table.SetDefinition("widgets.g.io", "6", []*Resource{custom("widgets.g.io", v1)})
	if table.Get(v1) == nil || table.Get(v2) != nil || table.ServedFrom("widgets.g.io") != "6" {
		t.Fatal("after the update only v1 should be served, built from 6")
	}
	// Another owner cannot take a served GVR, not even a built-in one.
	table.SetDefinition("jobs.batch", "7", []*Resource{custom("jobs.batch", jobs.GVR)})
	if got := table.Get(jobs.GVR); got != jobs {
		t.Fatalf("built-in jobs replaced by %+v", got)
	}
	table.SetTerminating("widgets.g.io")
	if !table.IsTerminating("widgets.g.io") {
		t.Fatal("widgets.g.io should be terminating")
	}
	// Forgetting the CRD stops serving it and clears its state.
	table.SetDefinition("widgets.g.io", "", nil)
	if table.Get(v1) != nil || table.IsTerminating("widgets.g.io") || table.ServedFrom("widgets.g.io") != "" || len(table.Definitions()) != 0 {
		t.Fatalf("widgets.g.io still known: definitions %v", table.Definitions())
	}
	if len(table.List()) != 1 || table.ForKind(jobs.GVK()) != jobs {
		t.Fatal("built-in jobs should be the only resource left")
	}
}
