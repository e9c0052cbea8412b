package openapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
)

// Media types of the documents. kubectl asks for the "@" spelling of the
// protobuf types; responses use the "." spelling, as kube-apiserver does.
const (
	mediaJSON         = "application/json"
	subJSON           = "json"
	subV2Proto        = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	subV2ProtoOld     = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	subV3Proto        = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
	subV3ProtoOld     = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	immutableLifetime = 365 * 24 * time.Hour
)

// format is one representation a document can be served in.
type format struct {
	subType     string
	contentType string
	proto       bool
}

var (
	v2Formats = []format{
		{subJSON, mediaJSON, false},
		{subV2ProtoOld, "application/" + subV2Proto, true},
		{subV2Proto, "application/" + subV2Proto, true},
	}
	v3Formats = []format{
		{subJSON, mediaJSON, false},
		{subV3Proto, "application/" + subV3Proto, true},
		{subV3ProtoOld, "application/" + subV3Proto, true},
	}
)

// negotiate picks the first format the Accept header allows, in its order of preference.
func negotiate(accept string, formats []format) (format, bool) {
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, f := range formats {
			if (clause.Type == "application" || clause.Type == "*") && (clause.SubType == f.subType || clause.SubType == "*") {
				return f, true
			}
		}
	}
	return format{}, false
}

// V2Handler serves the OpenAPI v2 document as JSON or protobuf.
func (s *Service) V2Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveDocument(w, r, s.v2, v2Formats)
	})
}

// V3Handler serves the v3 discovery index at /openapi/v3 and the group
// version documents at /openapi/v3/<api/v1|apis/group/version>.
func (s *Service) V3Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.Trim(strings.TrimPrefix(r.URL.Path, V3Path), "/")
		if key == "" {
			s.serveDiscovery(w, r)
			return
		}
		doc, found := s.v3[key]
		if !found {
			http.NotFound(w, r)
			return
		}
		s.serveDocument(w, r, doc, v3Formats)
	})
}

func (s *Service) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	d, err := s.discovery()
	if err != nil {
		slog.Error("serve openapi v3 discovery", "err", err)
		http.Error(w, "openapi v3 discovery unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Etag", strconv.Quote(d.etag))
	w.Header().Set("Content-Type", mediaJSON)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.data))
}

// serveDocument answers with the negotiated representation, honouring
// If-None-Match and, for v3, the ?hash= query of immutable URLs.
func (s *Service) serveDocument(w http.ResponseWriter, r *http.Request, doc *document, formats []format) {
	w.Header().Add("Vary", "Accept")
	f, ok := negotiate(r.Header.Get("Accept"), formats)
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	etag, err := doc.etag()
	if err != nil {
		slog.Error("serve openapi document", "path", r.URL.Path, "err", err)
		http.Error(w, "openapi document unavailable", http.StatusServiceUnavailable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != etag {
			key := strings.Trim(strings.TrimPrefix(r.URL.Path, V3Path), "/")
			http.Redirect(w, r, versionedURL(key, etag), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().Add(immutableLifetime).UTC().Format(http.TimeFormat))
	}
	body := doc.json
	if f.proto {
		body = doc.pb
	}
	data, err := body()
	if err != nil {
		slog.Error("serve openapi document", "path", r.URL.Path, "err", err)
		http.Error(w, "openapi document unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Etag", strconv.Quote(etag))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}
