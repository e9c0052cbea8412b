package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestKubectlListsAgreeAcrossPagesAndFormats lists objects with kubectl
// whole, in chunks (limit and continue), with a label selector, as JSON,
// YAML and server-side Tables, and checks that the answers agree.
func TestKubectlListsAgreeAcrossPagesAndFormats(t *testing.T) {
	s := startServer(t, "--no-agent")
	var manifest strings.Builder
	for i := range 25 {
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\n  labels: {group: g%d}\ndata: {k: \"<v%d>\"}\n", i, i%3, i)
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%02d\n  labels: {group: g%d}\nspec:\n  containers: [{name: c, image: busybox}]\n", i, i%3)
	}
	if out, err := s.kubectlStdin(manifest.String(), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}

	// Nothing changes config maps: whole, chunked and selected lists are
	// byte-identical where they hold the same objects.
	whole := s.kubectl("get", "configmaps", "-l", "group", "-o", "json")
	if chunked := s.kubectl("get", "configmaps", "-l", "group", "--chunk-size=4", "-o", "json"); chunked != whole {
		t.Errorf("chunked list differs from the whole list:\n%s\nwhole:\n%s", chunked, whole)
	}
	if !strings.Contains(whole, `"k": "\u003cv7\u003e"`) && !strings.Contains(whole, `"k": "<v7>"`) {
		t.Errorf("config map data missing:\n%s", whole)
	}
	yamlWhole := s.kubectl("get", "configmaps", "-l", "group=g1", "-o", "yaml")
	if yamlChunked := s.kubectl("get", "configmaps", "-l", "group=g1", "--chunk-size=2", "-o", "yaml"); yamlChunked != yamlWhole {
		t.Errorf("chunked YAML differs:\n%s\nwhole:\n%s", yamlChunked, yamlWhole)
	}
	if n := strings.Count(yamlWhole, "  name: cm-"); n != 8 {
		t.Errorf("group=g1 selected %d config maps, want 8:\n%s", n, yamlWhole)
	}

	// Pods as Tables (the scheduler may update them meanwhile: compare names).
	names := s.kubectl("get", "pods", "-o", "name")
	if chunked := s.kubectl("get", "pods", "--chunk-size=3", "-o", "name"); chunked != names || strings.Count(names, "pod/p-") != 25 {
		t.Errorf("pod names: whole\n%s\nchunked\n%s", names, chunked)
	}
	table := s.kubectl("get", "pods", "-l", "group=g2", "--chunk-size=3")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAME READY STATUS RESTARTS AGE" || len(lines) != 9 {
		t.Fatalf("kubectl get pods -l group=g2:\n%s", table)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if want := fmt.Sprintf("p-%02d", 2+3*i); f[0] != want || f[1] != "0/1" || f[2] != "Pending" {
			t.Errorf("row %d = %q, want %s 0/1 Pending", i, l, want)
		}
	}
	wide := s.kubectl("get", "pods", "-A", "-o", "wide", "--chunk-size=10")
	if !strings.Contains(wide, "NOMINATED NODE") || strings.Count(wide, "p-") != 25 {
		t.Errorf("kubectl get pods -A -o wide:\n%s", wide)
	}
}
