package apiserver

import (
	"net/http"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"
)

// serveResource dispatches a resource request to its verb handler.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	if res == nil || (!res.Namespaced && info.Namespace != "" && info.Resource != "namespaces") {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	if res.CreateOnly {
		s.reviews.Create(w, r, info)
		return
	}
	if info.Subresource != "" {
		s.serveSubresource(w, r, info)
		return
	}
	if info.Name == "" && (info.Verb == "update" || info.Verb == "patch") {
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, info.Verb))
		return
	}
	switch info.Verb {
	case "get":
		s.rest.Get(w, r, info)
	case "list":
		s.rest.List(w, r, info)
	case "watch":
		s.rest.Watch(w, r, info)
	case "create":
		if info.Name != "" {
			endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, "create"))
			return
		}
		s.rest.Create(w, r, info)
	case "update":
		s.rest.Update(w, r, info, strategy.Main)
	case "patch":
		s.rest.Patch(w, r, info, strategy.Main)
	case "delete":
		s.rest.Delete(w, r, info)
	case "deletecollection":
		s.rest.DeleteCollection(w, r, info)
	default:
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, r.Method))
	}
}

func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	res := info.Res
	if info.Name == "" || !res.HasSubresource(info.Subresource) {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	switch {
	case info.Subresource == "finalize" && r.Method == http.MethodPut:
		s.handleFinalize(w, r, info)
	case info.Subresource == "status" || info.Subresource == "approval":
		switch info.Verb {
		case "get":
			s.rest.Get(w, r, info)
		case "update":
			s.rest.Update(w, r, info, strategy.Status)
		case "patch":
			s.rest.Patch(w, r, info, strategy.Status)
		default:
			endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource+"/"+info.Subresource, info.Verb))
		}
	case info.Subresource == "binding" && r.Method == http.MethodPost:
		s.pods.Binding(w, r, info)
	case info.Subresource == "eviction" && r.Method == http.MethodPost:
		s.pods.Eviction(w, r, info)
	case info.Subresource == "token" && r.Method == http.MethodPost:
		s.tokens.Create(w, r, info)
	case info.Subresource == "log" && r.Method == http.MethodGet:
		s.nodes.Log(w, r, info)
	case info.Subresource == "exec" || info.Subresource == "attach":
		s.nodes.Exec(w, r, info)
	case info.Subresource == "proxy" && info.Resource == "nodes" && info.Group == "":
		s.nodes.Node(w, r, info)
	default:
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource+"/"+info.Subresource, info.Verb))
	}
}
