package agent

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/batchlet/batchlet/apiserver/query"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	criremotecommand "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/batchlet/batchlet/runtime"
)

const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
	protocolV5            = "v5.channel.k8s.io"
	protocolV4            = "v4.channel.k8s.io"
)

// server builds the HTTPS server of the kubelet-style endpoints.
func (a *Agent) server() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.handleLogs)
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", a.handleExec)
	mux.HandleFunc("/exec/{namespace}/{pod}/{uid}/{container}", a.handleExec)
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", a.handleAttach)
	mux.HandleFunc("/attach/{namespace}/{pod}/{uid}/{container}", a.handleAttach)
	mux.HandleFunc("GET /pods", a.handlePods)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	cert := a.cfg.TLSCertificate
	if cert == nil && a.cfg.GetCertificate == nil {
		c, err := selfSigned(a.cfg.ListenAddress, a.cfg.NodeName)
		if err != nil {
			a.log.Error("self-signed certificate", "err", err)
		}
		cert = c
	}
	// GetCertificate is asked only when Certificates is empty (clients
	// dialing an IP send no server name), so it replaces them.
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: a.cfg.GetCertificate}
	if cert != nil && a.cfg.GetCertificate == nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	if a.cfg.ClientCAs != nil {
		tlsCfg.ClientCAs, tlsCfg.ClientAuth = a.cfg.ClientCAs, tls.VerifyClientCertIfGiven
	}
	return &http.Server{Handler: a.authenticate(mux), TLSConfig: tlsCfg, ReadHeaderTimeout: 30 * time.Second}
}

func selfSigned(host, name string) (*tls.Certificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, []string{name, "localhost"})
	if err != nil {
		return nil, fmt.Errorf("generate certificate: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load certificate: %w", err)
	}
	return &c, nil
}

// authenticate requires a client certificate signed by Config.ClientCAs
// (verified in the TLS handshake) of an authorized client, or
// "Authorization: Bearer <token>" when Config.Token is set. With neither
// ClientCAs nor Token every request passes (tests, embeddings).
func (a *Agent) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.TLS != nil && len(r.TLS.VerifiedChains) > 0:
			if user := r.TLS.VerifiedChains[0][0].Subject; !a.authorizedClient(user.CommonName, user.Organization) {
				a.log.Debug("client certificate not authorized", "user", user.CommonName)
				http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", user.CommonName, strings.ToLower(r.Method)), http.StatusForbidden)
				return
			}
		case a.cfg.Token != "":
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.Token)) != 1 {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
		case a.cfg.ClientCAs != nil:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorizedClient: the API server's kubelet client (or another name in
// AuthorizedClients) or a cluster admin; never another node.
func (a *Agent) authorizedClient(user string, groups []string) bool {
	return slices.Contains(a.cfg.AuthorizedClients, user) || slices.Contains(groups, "system:masters")
}

// podUID finds a pod the agent runs, or (for its logs) one bound to this
// node that ended before the agent started.
func (a *Agent) podUID(ns, name string) (types.UID, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.states[ns+"/"+name]
	if !ok {
		if pod, err := a.pods.Pods(ns).Get(name); err == nil && pod.Spec.NodeName == a.cfg.NodeName {
			return pod.UID, true
		}
		return "", false
	}
	return st.uid, true
}

// handlePods answers the kubelet's /pods: the pods bound to this node, as
// a PodList (what `nodes/NAME/proxy/pods` shows, which upstream's e2e
// framework dumps after a failure).
func (a *Agent) handlePods(w http.ResponseWriter, _ *http.Request) {
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range pods {
		if p.Spec.NodeName == a.cfg.NodeName {
			list.Items = append(list.Items, *p)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&list); err != nil {
		a.log.Debug("write /pods", "err", err.Error())
	}
}

func (a *Agent) handleLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	uid, ok := a.podUID(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	opts, err := logOptions(r, a.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fw := &flushWriter{w: w}
	if err := a.cfg.Runtime.Logs(r.Context(), uid, container, opts, fw); err != nil {
		if !fw.wrote {
			status := http.StatusBadRequest
			if errors.Is(err, runtime.ErrNotFound) && !opts.Previous {
				status = http.StatusNotFound
			}
			http.Error(w, err.Error(), status)
		}
		return
	}
}

// logOptions parses the containerLogs query.
func logOptions(r *http.Request, now time.Time) (runtime.LogOptions, error) {
	q := r.URL.Query()
	var o runtime.LogOptions
	o.Follow, o.Previous, o.Timestamps = query.Bool(q, "follow"), query.Bool(q, "previous"), query.Bool(q, "timestamps")
	parse := func(key string) (*int64, error) {
		v := q.Get(key)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid %s %q", key, v)
		}
		return &n, nil
	}
	var err error
	if o.TailLines, err = parse("tailLines"); err != nil {
		return o, err
	}
	if o.LimitBytes, err = parse("limitBytes"); err != nil {
		return o, err
	}
	since, err := parse("sinceSeconds")
	if err != nil {
		return o, err
	}
	if since != nil {
		t := now.Add(-time.Duration(*since) * time.Second)
		o.SinceTime = &t
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("invalid sinceTime %q", v)
		}
		o.SinceTime = &t
	}
	return o, nil
}

type flushWriter struct {
	w     http.ResponseWriter
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	return f.w.Write(p)
}

func (f *flushWriter) Flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (a *Agent) handleExec(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	uid, ok := a.podUID(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	cmd := r.URL.Query()["command"]
	opts, err := criremotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ex := &executor{rt: a.cfg.Runtime, uid: uid}
	if wsstream.IsWebSocketRequest(r) {
		a.serveWebSocketExec(w, r, ex, container, cmd, opts, false)
		return
	}
	criremotecommand.ServeExec(w, r, ex, name, string(uid), container, cmd, opts,
		streamIdleTimeout, streamCreationTimeout, criremotecommand.SupportedStreamingProtocols)
}

// handleAttach attaches to a running container's stdio (kubectl attach,
// kubectl run -i).
func (a *Agent) handleAttach(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	uid, ok := a.podUID(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	if _, ok := a.cfg.Runtime.(runtime.Attacher); !ok {
		http.Error(w, "attach is not supported by this runtime", http.StatusBadRequest)
		return
	}
	opts, err := criremotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ex := &executor{rt: a.cfg.Runtime, uid: uid}
	if wsstream.IsWebSocketRequest(r) {
		a.serveWebSocketExec(w, r, ex, container, nil, opts, true)
		return
	}
	criremotecommand.ServeAttach(w, r, ex, name, string(uid), container, opts,
		streamIdleTimeout, streamCreationTimeout, criremotecommand.SupportedStreamingProtocols)
}

// executor adapts runtime.Exec to the streaming server.
type executor struct {
	rt  runtime.Runtime
	uid types.UID
}

func (e *executor) ExecInContainer(ctx context.Context, _, _, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan criremotecommand.TerminalSize, _ time.Duration) error {
	return e.rt.Exec(ctx, e.uid, container, cmd, execStreams(ctx, in, out, errw, tty, resize))
}

// AttachContainer implements the streaming server's Attacher.
func (e *executor) AttachContainer(ctx context.Context, _, _, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan criremotecommand.TerminalSize) error {
	at, ok := e.rt.(runtime.Attacher)
	if !ok {
		return fmt.Errorf("attach is not supported by this runtime")
	}
	return at.Attach(ctx, e.uid, container, execStreams(ctx, in, out, errw, tty, resize))
}

// execStreams adapts the streaming server's streams to the runtime's.
func execStreams(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan criremotecommand.TerminalSize) runtime.ExecStreams {
	s := runtime.ExecStreams{TTY: tty}
	if in != nil {
		s.Stdin = in
	}
	if out != nil {
		s.Stdout = out
	}
	if errw != nil {
		s.Stderr = errw
	}
	if resize != nil {
		ch := make(chan runtime.TerminalSize)
		s.Resize = ch
		go func() {
			defer close(ch)
			for size := range resize {
				select {
				case ch <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return s
}

// serveWebSocketExec speaks the v5 (and v4) channel protocol: channels 0
// stdin, 1 stdout, 2 stderr, 3 error (a Status as JSON), 4 resize; v5 adds
// 255 to close a stream.
func (a *Agent) serveWebSocketExec(w http.ResponseWriter, r *http.Request, ex *executor, container string, cmd []string, opts *criremotecommand.Options, attach bool) {
	channels := []wsstream.ChannelType{channel(opts.Stdin, wsstream.ReadChannel), channel(opts.Stdout, wsstream.WriteChannel),
		channel(opts.Stderr, wsstream.WriteChannel), wsstream.WriteChannel, wsstream.ReadChannel}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		protocolV5: {Binary: true, Channels: channels},
		protocolV4: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(streamIdleTimeout)
	// The reader logs "use of closed network connection" at ERROR whenever
	// the server closes first, which it always does after the status.
	r = r.WithContext(klog.NewContext(r.Context(), logr.Discard()))
	protocol, streams, err := conn.Open(w, r)
	if err != nil {
		a.log.Info("websocket exec upgrade failed", "err", err.Error())
		return
	}
	defer conn.Close()
	if protocol != protocolV5 {
		announceStreams(streams, opts)
	}
	var in io.Reader
	var out, errw io.WriteCloser
	if opts.Stdin {
		in = streams[0]
	}
	if opts.Stdout {
		out = streams[1]
	}
	if opts.Stderr {
		errw = streams[2]
	}
	var resize chan criremotecommand.TerminalSize
	if opts.TTY {
		resize = make(chan criremotecommand.TerminalSize)
		go decodeResize(r.Context(), streams[4], resize)
	}
	var runErr error
	if attach {
		runErr = ex.AttachContainer(r.Context(), "", "", container, in, out, errw, opts.TTY, resize)
	} else {
		runErr = ex.ExecInContainer(r.Context(), "", "", container, cmd, in, out, errw, opts.TTY, resize, 0)
	}
	status := execStatus(runErr)
	b, _ := json.Marshal(status)
	_, _ = streams[3].Write(b)
}

// announceStreams writes the empty frame on the lowest writable channel
// that tells a v4 client the streams are open. A v5 client (client-go's
// websocket executor, kubectl >= 1.30) needs no such signal and, when the
// frame beats its stream set-up, logs "Unknown stream id 1, discarding
// message" on stderr — noise in every scripted `kubectl exec`.
func announceStreams(streams []io.ReadWriteCloser, opts *criremotecommand.Options) {
	switch {
	case opts.Stdout:
		_, _ = streams[1].Write(nil)
	case opts.Stderr:
		_, _ = streams[2].Write(nil)
	default:
		_, _ = streams[3].Write(nil)
	}
}

func channel(on bool, t wsstream.ChannelType) wsstream.ChannelType {
	if on {
		return t
	}
	return wsstream.IgnoreChannel
}

// execStatus is the Status written on the error channel.
func execStatus(err error) metav1.Status {
	if err == nil {
		return metav1.Status{Status: metav1.StatusSuccess}
	}
	var ee *runtime.ExitError
	if errors.As(err, &ee) {
		return metav1.Status{Status: metav1.StatusFailure, Reason: "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", ee),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(ee.Code)}}}}
	}
	return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
		Message: fmt.Sprintf("error executing command in container: %v", err),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: err.Error()}}}, Code: http.StatusInternalServerError}
}

// decodeResize reads the JSON terminal sizes of the resize channel.
func decodeResize(ctx context.Context, r io.Reader, out chan<- criremotecommand.TerminalSize) {
	defer close(out)
	dec := json.NewDecoder(r)
	for {
		var size criremotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case out <- size:
		case <-ctx.Done():
			return
		}
	}
}
