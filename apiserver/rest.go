package apiserver

import (
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"net/http"
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
		s.handleGet(w, r, info)
	case "list":
		s.handleList(w, r, info)
	case "watch":
		s.handleWatch(w, r, info)
	case "create":
		if info.Name != "" {
			endpoints.WriteError(w, endpoints.ErrMethodNotSupported(info.Resource, "create"))
			return
		}
		s.handleCreate(w, r, info)
	case "update":
		s.handleUpdate(w, r, info, modeMain)
	case "patch":
		s.handlePatch(w, r, info, modeMain)
	case "delete":
		s.handleDelete(w, r, info)
	case "deletecollection":
		s.handleDeleteCollection(w, r, info)
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
			s.handleGet(w, r, info)
		case "update":
			s.handleUpdate(w, r, info, modeStatus)
		case "patch":
			s.handlePatch(w, r, info, modeStatus)
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

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	obj, _, err := s.objects.Get(r.Context(), info.Res, info.Namespace, info.Name)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	s.codec.WriteObject(w, r, info.Res, http.StatusOK, obj)
}
