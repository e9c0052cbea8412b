package endpoints

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseResourcePath(t *testing.T) {
	cases := map[string]struct {
		path   string
		want   RequestInfo
		wantOK bool
	}{
		"core list":       {path: "/api/v1/pods", want: RequestInfo{Version: "v1", Resource: "pods"}, wantOK: true},
		"namespaced get":  {path: "/apis/batch/v1/namespaces/ns/jobs/j", want: RequestInfo{Group: "batch", Version: "v1", Namespace: "ns", Resource: "jobs", Name: "j"}, wantOK: true},
		"status":          {path: "/apis/batch/v1/namespaces/ns/jobs/j/status", want: RequestInfo{Group: "batch", Version: "v1", Namespace: "ns", Resource: "jobs", Name: "j", Subresource: "status"}, wantOK: true},
		"legacy watch":    {path: "/api/v1/watch/namespaces/ns/pods", want: RequestInfo{Version: "v1", Namespace: "ns", Resource: "pods", Verb: "watch"}, wantOK: true},
		"namespace":       {path: "/api/v1/namespaces/ns", want: RequestInfo{Version: "v1", Resource: "namespaces", Name: "ns"}, wantOK: true},
		"node proxy":      {path: "/api/v1/nodes/n/proxy/pods", want: RequestInfo{Version: "v1", Resource: "nodes", Name: "n", Subresource: "proxy", ProxyPath: "pods"}, wantOK: true},
		"group discovery": {path: "/apis/batch/v1"},
		"other":           {path: "/healthz"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseResourcePath(tc.path)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Fatalf("ParseResourcePath(%q) = %+v, %v; want %+v, %v", tc.path, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	cases := map[string]struct {
		accept  string
		want    OutputFormat
		wantErr bool
	}{
		"none":          {want: FormatObject},
		"json":          {accept: "application/json", want: FormatObject},
		"table":         {accept: "application/json;as=Table;g=meta.k8s.io;v=v1,application/json", want: FormatTable},
		"metadata":      {accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", want: FormatMetadata},
		"protobuf only": {accept: "application/vnd.kubernetes.protobuf", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			got, err := Negotiate(r)
			if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
				t.Fatalf("Negotiate(%q) = %v, %v; want %v (error %v)", tc.accept, got, err, tc.want, tc.wantErr)
			}
			if err != nil && apierrors.ReasonForError(err) != "NotAcceptable" {
				t.Fatalf("error reason %q, want NotAcceptable", apierrors.ReasonForError(err))
			}
		})
	}
}

// WriteError answers with the error's Status, 500 for a plain error.
func TestWriteError(t *testing.T) {
	cases := map[string]struct {
		err      error
		wantCode int
	}{
		"not found": {err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), wantCode: http.StatusNotFound},
		"plain":     {err: errors.New("boom"), wantCode: http.StatusInternalServerError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteError(w, tc.err)
			if w.Code != tc.wantCode || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("code %d content type %q, want %d JSON", w.Code, w.Header().Get("Content-Type"), tc.wantCode)
			}
		})
	}
}

type adoptingWriter struct {
	*httptest.ResponseRecorder
	adopted []byte
}

func (w *adoptingWriter) Adopt(b []byte) bool { w.adopted = b; return true }

type wrapper struct{ http.ResponseWriter }

func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// An owned body goes to the Adopter under any wrappers, uncopied; other
// writers get it written.
func TestWriteOwned(t *testing.T) {
	body := []byte("body")
	inner := &adoptingWriter{ResponseRecorder: httptest.NewRecorder()}
	writeOwned(wrapper{wrapper{inner}}, body)
	if &inner.adopted[0] != &body[0] || inner.Body.Len() != 0 {
		t.Fatalf("adopted %q, written %q: want the body adopted as is", inner.adopted, inner.Body.Bytes())
	}
	plain := httptest.NewRecorder()
	writeOwned(wrapper{plain}, body)
	if plain.Body.String() != "body" {
		t.Fatalf("written %q, want body", plain.Body.String())
	}
}
