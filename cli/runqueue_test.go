package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batchlet/batchlet/cli/runner"
)

func TestWithQueueFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "items.txt")
	if err := os.WriteFile(file, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		manifest string
		file     string
		wantCM   string
		wantErr  string
	}{
		{name: "a Job gets a ConfigMap named after it", file: file, wantCM: "fine-queue",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: fine}\nspec: {template: {spec: {containers: []}}}\n"},
		{name: "no Job", file: file, wantErr: "--queue-file: the manifest has no Job to give the queue to",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"},
		{name: "no file", file: file + ".missing", wantErr: "no such file",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: fine}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := runner.ParseManifest(strings.NewReader(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			out, err := withQueueFile(objs, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cm := out[0]
			data, _, _ := unstructured.NestedString(cm.Object, "data", "items")
			ann, _, _ := unstructured.NestedString(out[1].Object, "spec", "template", "metadata", "annotations", "batchlet.dev/work-queue")
			if cm.GetKind() != "ConfigMap" || cm.GetName() != tc.wantCM || data != "a\nb\n" || ann != "configmap/"+tc.wantCM+"/items" {
				t.Errorf("ConfigMap %s %s data %q, annotation %q", cm.GetKind(), cm.GetName(), data, ann)
			}
		})
	}
}
