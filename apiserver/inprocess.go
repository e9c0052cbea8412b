package apiserver

import (
	"context"
	"io"
	"net/http"
	"sync"

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
