package endpoints

import (
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/query"

	"github.com/batchlet/batchlet/apiserver/registry"
)

// RequestInfo is what the URL of a resource request names.
type RequestInfo struct {
	Group, Version string
	Namespace      string
	Resource       string
	Name           string
	Subresource    string
	// ProxyPath is what follows a proxy subresource (nodes/NAME/proxy/PATH).
	ProxyPath string
	Verb      string
	Res       *registry.Resource
}

// ParseResourcePath splits /api/v1/... and /apis/g/v/... paths. ok is false
// for paths that are not resource paths (discovery, others).
func ParseResourcePath(path string) (info RequestInfo, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.Version = parts[1]
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.Group, info.Version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return info, false
	}
	if len(parts) > 0 && parts[0] == "watch" {
		info.Verb = "watch"
		parts = parts[1:]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		info.Namespace = parts[1]
		parts = parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return info, false
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = strings.Join(parts[2:], "/")
		if parts[2] == "proxy" {
			info.Subresource, info.ProxyPath = "proxy", strings.Join(parts[3:], "/")
		}
	}
	if info.Resource == "namespaces" && len(parts) >= 2 {
		info.Namespace = ""
	}
	return info, true
}

func VerbFor(r *http.Request, info RequestInfo) string {
	if info.Verb == "watch" {
		return "watch"
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if info.Name != "" {
			return "get"
		}
		if query.Bool(q, "watch") {
			return "watch"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if info.Name != "" {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}
