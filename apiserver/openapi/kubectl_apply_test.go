package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const appliedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  namespace: default
spec:
  backoffLimit: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
        env:
        - {name: A, value: "2"}
`

// TestKubectlApplyPatchesWithServerSideValidation runs kubectl apply on a
// Job that already exists (served by a stub): kubectl must find
// fieldValidation in the documents, skip client-side validation, and send a
// strategic merge patch asking for Strict validation.
func TestKubectlApplyPatchesWithServerSideValidation(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	existing := map[string]interface{}{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]interface{}{"name": "pi", "namespace": "default", "resourceVersion": "1", "uid": "u1",
			"annotations": map[string]interface{}{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"pi","namespace":"default"},"spec":{"backoffLimit":3,"template":{"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"perl","name":"pi"}],"restartPolicy":"Never"}}}}`}},
		"spec": map[string]interface{}{"backoffLimit": 3, "template": map[string]interface{}{"spec": map[string]interface{}{
			"restartPolicy": "Never", "containers": []interface{}{map[string]interface{}{"name": "pi", "image": "perl", "env": []interface{}{map[string]interface{}{"name": "A", "value": "1"}}}}}}},
	}
	var mu sync.Mutex
	var patchQuery, patchType, patchBody string
	mux := http.NewServeMux()
	discoveryStub(mux)
	if err := Install(mux); err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("/apis/batch/v1/namespaces/default/jobs/pi", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			patchQuery, patchType, patchBody = r.URL.RawQuery, r.Header.Get("Content-Type"), string(body)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(existing)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()

	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, dir, srv.URL)
	manifest := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(manifest, []byte(appliedJob), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"), "apply", "-f", manifest).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "job.batch/pi configured") {
		t.Errorf("kubectl apply output = %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if patchType != "application/strategic-merge-patch+json" {
		t.Errorf("patch Content-Type = %q", patchType)
	}
	if !strings.Contains(patchQuery, "fieldValidation=Strict") {
		t.Errorf("patch query = %q, want fieldValidation=Strict", patchQuery)
	}
	if !strings.Contains(patchBody, `"$setElementOrder/env":[{"name":"A"}]`) {
		t.Errorf("patch body = %s, want env merged by name", patchBody)
	}
}
