package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryStub answers the legacy discovery requests kubectl needs to map
// "job" and "jobset" to their group versions; the real server's discovery
// is the API server's business.
func discoveryStub(mux *http.ServeMux) {
	reply := func(path string, v interface{}) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		})
	}
	resources := func(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
		return &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: rs}
	}
	verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	group := func(name, version string) metav1.APIGroup {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + version, Version: version}
		return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	}
	reply("/api", &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	reply("/apis", &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups: []metav1.APIGroup{group("batch", "v1"), group("jobset.x-k8s.io", "v1alpha2")}})
	reply("/api/v1", resources("v1", metav1.APIResource{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: verbs}))
	reply("/apis/batch/v1", resources("batch/v1", metav1.APIResource{Name: "jobs", Namespaced: true, Kind: "Job", Verbs: verbs}))
	reply("/apis/jobset.x-k8s.io/v1alpha2", resources("jobset.x-k8s.io/v1alpha2", metav1.APIResource{Name: "jobsets", Namespaced: true, Kind: "JobSet", Verbs: verbs}))
}

// TestKubectlExplain runs the real kubectl explain against the served documents.
func TestKubectlExplain(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	mux := http.NewServeMux()
	discoveryStub(mux)
	if err := Install(mux); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()

	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, dir, srv.URL)
	cases := []struct {
		field string
		want  []string
	}{
		{"job.spec.backoffLimit", []string{"GROUP:      batch", "KIND:       Job", "FIELD: backoffLimit <integer>", "Specifies the number of retries before marking this job failed."}},
		{"jobset.spec.failurePolicy", []string{"GROUP:      jobset.x-k8s.io", "KIND:       JobSet", "FIELD: failurePolicy <FailurePolicy>", "failurePolicy configures when to declare the JobSet as failed.", "maxRestarts"}},
	}
	for _, tc := range cases {
		cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"), "explain", tc.field)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl explain %s: %v\n%s", tc.field, err, out)
		}
		for _, want := range tc.want {
			if !strings.Contains(string(out), want) {
				t.Errorf("kubectl explain %s output lacks %q:\n%s", tc.field, want, out)
			}
		}
	}
}

// writeKubeconfig writes a kubeconfig for a TLS test server into dir.
func writeKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	config := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
