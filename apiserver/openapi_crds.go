package apiserver

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/spec3"
)

// serveOpenAPIV3 serves the static documents of the built-in groups and,
// for the group versions only CRDs serve, documents built from their
// schemas as upstream builds them (kubectl explain and client-side
// validation read them); the discovery index lists both.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	docs := s.crdOpenAPIDocs(r.Context())
	if path == "/openapi/v3" && len(docs) > 0 && s.cfg.OpenAPIV3 != nil {
		s.serveOpenAPIIndex(w, r, docs)
		return
	}
	if data, ok := docs[strings.TrimPrefix(path, "/openapi/v3/")]; ok {
		serveOpenAPIJSON(w, r, data)
		return
	}
	s.serveOptional(w, r, s.cfg.OpenAPIV3)
}

// serveOpenAPIIndex adds the CRD documents to the static index.
func (s *Server) serveOpenAPIIndex(w http.ResponseWriter, r *http.Request, docs map[string][]byte) {
	rec := httptest.NewRecorder()
	static := r.Clone(r.Context())
	static.Header.Del("If-None-Match") // the merged index has an ETag of its own
	static.Header.Del("If-Modified-Since")
	s.cfg.OpenAPIV3.ServeHTTP(rec, static)
	var index struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &index) != nil || index.Paths == nil {
		s.serveOptional(w, r, s.cfg.OpenAPIV3)
		return
	}
	for key, data := range docs {
		entry, _ := json.Marshal(map[string]string{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + openAPIHash(data)})
		index.Paths[key] = entry
	}
	data, err := json.Marshal(index)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	serveOpenAPIJSON(w, r, data)
}

// serveOpenAPIJSON answers with a JSON document and its ETag, or 304 when
// the client has it.
func serveOpenAPIJSON(w http.ResponseWriter, r *http.Request, data []byte) {
	etag := strconv.Quote(openAPIHash(data))
	w.Header().Set("Etag", etag)
	w.Header().Set("Vary", "Accept")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func openAPIHash(data []byte) string {
	return strings.ToUpper(fmt.Sprintf("%x", sha512.Sum512(data)))
}

// crdOpenAPIDocs builds the v3 document of each group version served only
// by CRDs, keyed "apis/<group>/<version>".
func (s *Server) crdOpenAPIDocs(ctx context.Context) map[string][]byte {
	builtin := map[string]bool{}
	byGV := map[string][]*registry.Resource{}
	for _, r := range s.served.list() {
		gv := r.GroupVersion().String()
		if !r.CustomResource {
			builtin[gv] = true
			continue
		}
		byGV[gv] = append(byGV[gv], r)
	}
	docs := map[string][]byte{}
	for gv, rs := range byGV {
		if builtin[gv] {
			continue
		}
		var specs []*spec3.OpenAPI
		for _, r := range rs {
			crd, err := s.definitionOf(ctx, r)
			if err != nil {
				s.log.Warn("openapi for CRD", "name", r.Definition, "err", err)
				continue
			}
			doc, err := builder.BuildOpenAPIV3(crd, r.GVR.Version, builder.Options{})
			if err != nil {
				s.log.Warn("openapi for CRD", "name", r.Definition, "err", err)
				continue
			}
			specs = append(specs, doc)
		}
		if len(specs) == 0 {
			continue
		}
		merged, err := builder.MergeSpecsV3(specs...)
		if err != nil {
			s.log.Warn("merge CRD openapi", "groupVersion", gv, "err", err)
			continue
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(merged); err != nil {
			continue
		}
		docs["apis/"+gv] = bytes.TrimSpace(buf.Bytes())
	}
	return docs
}

// definitionOf reads the CRD a custom resource is served from.
func (s *Server) definitionOf(ctx context.Context, r *registry.Resource) (*apiextensionsv1.CustomResourceDefinition, error) {
	obj, _, err := s.objects.GetShared(ctx, s.crdResource(), "", r.Definition)
	if err != nil {
		return nil, err
	}
	return obj.(*apiextensionsv1.CustomResourceDefinition), nil
}
