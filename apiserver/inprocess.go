package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/batchlet/batchlet/apiserver/query"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// InProcessConfig is a client-go config whose requests are served by this
// server's handler in the same process (no TCP, no TLS), authenticated as
// admin and without client-side rate limiting.
func (s *Server) InProcessConfig() *rest.Config {
	return &rest.Config{
		Host:      "http://batchlet.in-process",
		Transport: &inProcessTransport{handler: s.handler},
		QPS:       -1,
		// Typed clients speak protobuf (as kube-controller-manager does); the
		// dynamic and metadata clients force JSON themselves.
		ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf, AcceptContentTypes: runtime.ContentTypeProtobuf + ",application/json"},
		UserAgent:     "batchlet-in-process",
	}
}

// inProcessTransport calls an http.Handler directly. The response body is a
// pipe the handler writes into, so watch streams arrive as they are flushed.
type inProcessTransport struct {
	handler http.Handler
}

func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(context.WithValue(req.Context(), ctxInProcess, true))
	r := req.Clone(ctx)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.RequestURI == "" {
		r.RequestURI = r.URL.RequestURI()
	}
	r.RemoteAddr = "in-process"
	if !streams(r) {
		defer cancel()
		return serveBuffered(t.handler, r, req), nil
	}
	pr, pw := io.Pipe()
	rw := &pipeResponseWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			rw.sendHeader(http.StatusOK)
			_ = pw.Close()
		}()
		t.handler.ServeHTTP(rw, r)
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		cancel()
		_ = pr.Close()
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: http.StatusText(rw.code), StatusCode: rw.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: &cancelOnClose{ReadCloser: pr, cancel: cancel}, ContentLength: -1, Request: req,
	}, nil
}

// streams reports whether a request's answer may be a stream the client
// reads as it comes (watches, followed logs, exec/attach/port-forward,
// proxies); every other answer is complete when the handler returns.
func streams(r *http.Request) bool {
	q := r.URL.Query()
	if query.Bool(q, "watch") || query.Bool(q, "follow") || r.Header.Get("Upgrade") != "" {
		return true
	}
	p := r.URL.Path
	return strings.Contains(p, "/watch/") || strings.HasSuffix(p, "/exec") || strings.HasSuffix(p, "/attach") ||
		strings.HasSuffix(p, "/portforward") || strings.Contains(p, "/proxy")
}

// serveBuffered runs the handler in the caller's goroutine and answers
// with what it wrote: no goroutine, pipe or hand-off per request.
func serveBuffered(h http.Handler, r, orig *http.Request) *http.Response {
	rw := &bufferedResponseWriter{header: http.Header{}}
	h.ServeHTTP(rw, r)
	if rw.code == 0 {
		rw.code = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(rw.code), StatusCode: rw.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.header, Body: io.NopCloser(bytes.NewReader(rw.body.Bytes())), ContentLength: int64(rw.body.Len()), Request: orig,
	}
}

// bufferedResponseWriter keeps a whole answer in memory.
type bufferedResponseWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *bufferedResponseWriter) Header() http.Header { return w.header }

func (w *bufferedResponseWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufferedResponseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Adopt makes b, which nothing else refers to, the whole body, if nothing
// was written yet (endpoints.Adopter).
func (w *bufferedResponseWriter) Adopt(b []byte) bool {
	if w.body.Len() > 0 {
		return false
	}
	w.WriteHeader(http.StatusOK)
	w.body = *bytes.NewBuffer(b)
	return true
}

// Flush is a no-op: the answer goes out when the handler returns.
func (w *bufferedResponseWriter) Flush() {}

// cancelOnClose ends the handler's context when the client closes the body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}

// pipeResponseWriter is an http.ResponseWriter writing into a pipe.
type pipeResponseWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
}

func (w *pipeResponseWriter) Header() http.Header { return w.header }

func (w *pipeResponseWriter) sendHeader(code int) {
	w.once.Do(func() {
		w.code = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponseWriter) WriteHeader(code int) { w.sendHeader(code) }

func (w *pipeResponseWriter) Write(b []byte) (int, error) {
	w.sendHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is a no-op: pipe writes reach the reader directly.
func (w *pipeResponseWriter) Flush() { w.sendHeader(http.StatusOK) }
