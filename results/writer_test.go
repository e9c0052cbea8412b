package results

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// The REST writer posts the typed result as JSON to the namespace's
// collection; AlreadyExists is success, other failures are errors.
func TestRESTWriter(t *testing.T) {
	gr := schema.GroupResource{Group: Group, Resource: Resource}
	tests := []struct {
		name    string
		answer  *metav1.Status
		wantErr string
	}{
		{name: "created"},
		{name: "exists", answer: &apierrors.NewAlreadyExists(gr, "p.c.0").ErrStatus},
		{name: "forbidden", answer: &apierrors.NewForbidden(gr, "p.c.0", nil).ErrStatus, wantErr: "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ContainerResult
			var path, method, contentType string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path, method, contentType = r.URL.Path, r.Method, r.Header.Get("Content-Type")
				body, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(body, &got); err != nil {
					t.Errorf("body %q: %v", body, err)
				}
				w.Header().Set("Content-Type", "application/json")
				if tt.answer == nil {
					w.WriteHeader(http.StatusCreated)
					_, _ = w.Write(body)
					return
				}
				tt.answer.APIVersion, tt.answer.Kind = "v1", "Status"
				w.WriteHeader(int(tt.answer.Code))
				_ = json.NewEncoder(w).Encode(tt.answer)
			}))
			defer srv.Close()
			w, err := NewWriter(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			r := &ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: "p.c.0", Namespace: "ns"},
				Spec: ContainerResultSpec{PodName: "p", PodUID: "u", ContainerName: "c", ExitCode: 3}}
			err = w.Create(context.Background(), r)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Create = %v, want error containing %q", err, tt.wantErr)
			}
			if method != http.MethodPost || path != "/apis/results.batchlet.dev/v1/namespaces/ns/containerresults" || contentType != "application/json" {
				t.Errorf("request %s %s (%s), want POST of JSON to the namespace's containerresults", method, path, contentType)
			}
			if got.APIVersion != "results.batchlet.dev/v1" || got.Kind != Kind || got.Name != "p.c.0" || got.Spec.ExitCode != 3 || got.Spec.PodName != "p" {
				t.Errorf("sent %+v", got)
			}
		})
	}
}
