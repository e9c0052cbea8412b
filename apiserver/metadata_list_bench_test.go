package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/storage/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metadataBenchResults is how many ContainerResults the metadata list
// benchmarks store.
const metadataBenchResults = 5000

// metadataBenchServer is a server holding metadataBenchResults
// ContainerResults, as the agent writes them.
func metadataBenchServer(b *testing.B) *Server {
	b.Helper()
	srv, err := New(Config{Storage: memory.New(100000), Authenticator: endpoints.TokenMap{testToken: endpoints.AdminUser()}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range metadataBenchResults {
		if err := srv.InProcessCalls().CreateJSON(ctx, results.GVR, "default", resultJSON(b, jobPod(i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return srv
}

// BenchmarkMetadataListCustomResources is a metadata-only list of
// ContainerResults (kubectl get -o name, the metadata client's) over
// HTTP, in pages of 500 as the retention sweep reads them.
func BenchmarkMetadataListCustomResources(b *testing.B) {
	srv := metadataBenchServer(b)
	h := srv.Handler()
	for b.Loop() {
		cont := ""
		for {
			req := httptest.NewRequest(http.MethodGet, "/apis/results.batchlet.dev/v1/containerresults?limit=500&continue="+cont, nil)
			req.Header.Set("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("list: %d %s", rec.Code, rec.Body)
			}
			var l metav1.PartialObjectMetadataList
			if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
				b.Fatal(err)
			}
			if cont = l.Continue; cont == "" {
				break
			}
		}
	}
}

// BenchmarkMetadataListCustomResourcesLocal is the in-process metadata
// informers' list of ContainerResults (the garbage collector's relist).
func BenchmarkMetadataListCustomResourcesLocal(b *testing.B) {
	srv := metadataBenchServer(b)
	lw, err := srv.LocalListerWatcher(results.GVR, "", true, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
