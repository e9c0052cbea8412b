package openapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
)

//go:generate ../../hack/update-openapi.sh

//go:embed data
var embedded embed.FS

// Paths the documents are served under.
const (
	V2Path = "/openapi/v2"
	V3Path = "/openapi/v3"
)

// Service serves the embedded OpenAPI documents.
type Service struct {
	v2        *document
	v3        map[string]*document // keyed "api/v1", "apis/batch/v1", ...
	discovery func() (discoveryDoc, error)
}

// discoveryDoc is the serialized v3 discovery index and its ETag.
type discoveryDoc struct {
	data []byte
	etag string
}

// New returns a Service over the embedded documents. It only lists them;
// each document is read, hashed and converted on first request.
func New() (*Service, error) {
	return newService(embedded)
}

func newService(fsys fs.FS) (*Service, error) {
	s := &Service{v2: newDocument(fsys, "data/v2.json", v2Proto), v3: map[string]*document{}}
	err := fs.WalkDir(fsys, "data/v3", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		key := strings.TrimSuffix(strings.TrimPrefix(name, "data/v3/"), ".json")
		s.v3[key] = newDocument(fsys, name, v3Proto)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list openapi v3 documents: %w", err)
	}
	if len(s.v3) == 0 {
		return nil, fmt.Errorf("no openapi v3 documents embedded")
	}
	s.discovery = sync.OnceValues(s.buildDiscovery)
	return s, nil
}

// GroupVersions lists the keys of the v3 documents ("api/v1", "apis/batch/v1", ...), sorted.
func (s *Service) GroupVersions() []string {
	keys := make([]string, 0, len(s.v3))
	for k := range s.v3 {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// discoveryIndex is the body of GET /openapi/v3.
type discoveryIndex struct {
	Paths map[string]discoveryEntry `json:"paths"`
}

type discoveryEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

func (s *Service) buildDiscovery() (discoveryDoc, error) {
	index := discoveryIndex{Paths: map[string]discoveryEntry{}}
	for key, doc := range s.v3 {
		etag, err := doc.etag()
		if err != nil {
			return discoveryDoc{}, err
		}
		index.Paths[key] = discoveryEntry{ServerRelativeURL: versionedURL(key, etag)}
	}
	data, err := json.Marshal(index)
	if err != nil {
		return discoveryDoc{}, fmt.Errorf("marshal openapi v3 discovery: %w", err)
	}
	return discoveryDoc{data: data, etag: computeETag(data)}, nil
}

// versionedURL is the immutable URL of one v3 document: /openapi/v3/apis/batch/v1?hash=<etag>.
func versionedURL(key, etag string) string {
	u := url.URL{Path: path.Join(V3Path, key), RawQuery: url.Values{"hash": {etag}}.Encode()}
	return u.String()
}

// Mux is the part of *http.ServeMux Install needs.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Install registers /openapi/v2, /openapi/v3 and /openapi/v3/ on mux.
func (s *Service) Install(mux Mux) {
	mux.Handle(V2Path, s.V2Handler())
	mux.Handle(V3Path, s.V3Handler())
	mux.Handle(V3Path+"/", s.V3Handler())
}

// Install registers the embedded documents' handlers on mux.
func Install(mux Mux) error {
	s, err := New()
	if err != nil {
		return err
	}
	s.Install(mux)
	return nil
}

// NewV2Handler returns the handler of /openapi/v2.
func NewV2Handler() (http.Handler, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	return s.V2Handler(), nil
}

// NewV3Handler returns the handler of /openapi/v3 and everything below it.
func NewV3Handler() (http.Handler, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	return s.V3Handler(), nil
}
