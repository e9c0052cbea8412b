package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/discovery"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/endpoints/handlers"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"

	"github.com/batchlet/batchlet/storage"
)

type ctxKey int

const (
	ctxInProcess ctxKey = iota
)

func (s *Server) buildHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				endpoints.WriteError(w, apierrors.NewInternalError(fmt.Errorf("panic: %v", p)))
			}
		}()
		s.serveHTTP(w, r)
	})
}

// statusRecorder remembers the response code for metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController and the proxy reach the hijacker.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch path {
	case "/healthz", "/livez":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	case "/readyz":
		s.serveReadyz(w)
		return
	case "/version", "/version/":
		s.serveVersion(w)
		return
	}
	user, ok := s.authenticate(r)
	if !ok {
		endpoints.WriteError(w, endpoints.ErrUnauthorized())
		return
	}
	user, err := authn.Impersonate(r.Context(), s.authz, user, r.Header)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	r = r.WithContext(endpoints.WithUser(r.Context(), user))
	if isNonResourcePath(path) {
		if err := s.authorizeNonResource(r.Context(), r); err != nil {
			endpoints.WriteError(w, err)
			return
		}
	}
	switch {
	case path == BackupPath:
		s.serveBackup(w, r)
		return
	case path == "/metrics":
		promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	case path == "/openapi/v2" || strings.HasPrefix(path, "/openapi/v2/"):
		s.serveOptional(w, r, s.cfg.OpenAPIV2)
		return
	case path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/"):
		s.discovery.ServeOpenAPIV3(w, r)
		return
	}
	if s.discovery.Serve(w, r) {
		return
	}
	info, ok := endpoints.ParseResourcePath(path)
	if !ok {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	info.Res = s.resource(info.Group, info.Version, info.Resource)
	info.Verb = endpoints.VerbFor(r, info)
	start := s.clock.Now()
	rec := &statusRecorder{ResponseWriter: w}
	if err := s.authorizeResource(r.Context(), info); err != nil {
		endpoints.WriteError(rec, err)
	} else {
		s.serveResource(rec, r.WithContext(handlers.WithFieldManager(r.Context(), r)), info)
	}
	if info.Res != nil && info.Res.GVR == crdGVR && isWriteVerb(info.Verb) && rec.code < 300 {
		s.crds.Sync(r.Context()) // names, conditions and serving follow at once
	}
	took := s.clock.Since(start)
	s.metrics.observe(info.Verb, info.Group, info.Version, info.Resource, info.Subresource, rec.code, took)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.Debug("request", "verb", info.Verb, "resource", info.Resource, "subresource", info.Subresource,
			"namespace", info.Namespace, "name", info.Name, "code", rec.code, "duration", took)
	}
}

// isNonResourcePath: the authenticated paths that are not resources.
func isNonResourcePath(path string) bool {
	return path == "/metrics" || path == BackupPath || path == "/openapi/v2" || strings.HasPrefix(path, "/openapi/v2/") ||
		path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/") || discovery.IsPath(path)
}

func (s *Server) serveOptional(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if h == nil {
		endpoints.WriteError(w, endpoints.ErrNotFoundPath())
		return
	}
	h.ServeHTTP(w, r)
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// serveReadyz says not ready, with the reason, while the store cannot take
// writes (a full disk), in kube-apiserver's format for a failed check.
func (s *Server) serveReadyz(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r, ok := s.store.(storage.Readier); ok {
		if err := r.Ready(); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = fmt.Fprintf(w, "[-]storage failed: %v\nreadyz check failed\n", err)
			return
		}
	}
	_, _ = w.Write([]byte("ok"))
}

// serveVersion answers /version with the Kubernetes version batchlet
// implements.
func (s *Server) serveVersion(w http.ResponseWriter) {
	endpoints.WriteJSON(w, http.StatusOK, version.Info{
		Major: Major, Minor: Minor, GitVersion: GitVersion, GitCommit: "batchlet", GitTreeState: "clean",
		BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}
