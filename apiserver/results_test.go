package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/results"
)

// resultBody is a ContainerResult as the agent writes it.
func resultBody(t *testing.T, pod, job string, index string, code int32) (string, []byte) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default", UID: types.UID(pod + "-uid"),
		Labels:          map[string]string{"batch.kubernetes.io/job-name": job, "batch.kubernetes.io/job-completion-index": index},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: "job-uid", Controller: ptrTo(true)}}}}
	at := results.Attempt{Container: "main", State: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}
	u, err := results.ToUnstructured(results.New(p, at, "last line\n", false))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return u.GetName(), data
}

// TestContainerResultsServed: the results CRD is served from the start,
// creates are idempotent by name (409 on a retry), results select by Job
// name, and kubectl's table has the CRD's columns.
func TestContainerResultsServed(t *testing.T) {
	e := newTestEnv(t)
	const path = "/apis/results.batchlet.dev/v1/namespaces/default/containerresults"
	name, body := resultBody(t, "pi-0-abcde", "pi", "0", 1)
	if name != "pi-0-abcde.main.0" {
		t.Fatalf("name = %s, want pi-0-abcde.main.0", name)
	}
	if code, data := e.do(t, http.MethodPost, path, "", "application/json", body, testToken); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	if code, data := e.do(t, http.MethodPost, path, "", "application/json", body, testToken); code != http.StatusConflict {
		t.Fatalf("create again: %d %s, want 409", code, data)
	}
	_, other := resultBody(t, "other-1-xyz", "other", "1", 0)
	if code, data := e.do(t, http.MethodPost, path, "", "application/json", other, testToken); code != http.StatusCreated {
		t.Fatalf("create other: %d %s", code, data)
	}

	code, data := e.do(t, http.MethodGet, path+"?fieldSelector=spec.jobName%3Dpi", "", "", nil, testToken)
	if code != http.StatusOK || !strings.Contains(string(data), `"name":"pi-0-abcde.main.0"`) || strings.Contains(string(data), "other-1-xyz") {
		t.Fatalf("list by spec.jobName: %d %s", code, data)
	}
	code, data = e.do(t, http.MethodGet, path+"?labelSelector=batch.kubernetes.io%2Fjob-completion-index%3D1", "", "", nil, testToken)
	if code != http.StatusOK || !strings.Contains(string(data), "other-1-xyz") || strings.Contains(string(data), "pi-0-abcde") {
		t.Fatalf("list by index label: %d %s", code, data)
	}

	code, data = e.do(t, http.MethodGet, path+"/"+name, "application/json;as=Table;v=v1;g=meta.k8s.io", "", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("table: %d %s", code, data)
	}
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got, want := strings.Join(cols, ","), "Name,Job,Index,Container,Attempt,Exit,Reason,Pod,Node,Finished"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[1] != "pi" || table.Rows[0].Cells[5] != float64(1) {
		t.Errorf("row = %v, want job pi exit 1", table.Rows)
	}
}
