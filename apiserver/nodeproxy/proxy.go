// Package nodeproxy forwards requests to node agents, as kube-apiserver's
// kubelet client does: pods/log (to the agent's containerLogs), pods/exec
// and pods/attach (upgrades included) and nodes/NAME/proxy/PATH. It finds
// pods and nodes only through Objects and talks to agents over TLS with
// the server's kubelet client certificate and, when set, a bearer token.
package nodeproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/query"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Objects reads the pods and nodes requests name; the proxy only reads
// what they return.
type Objects interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// Proxy serves the requests that go on to node agents.
type Proxy struct {
	Objects Objects
	// Transport reaches the agents (see NewTransport).
	Transport *http.Transport
	// Token, when set, is sent to agents as a bearer token.
	Token string
	// Logger has the proxy's copy errors, at debug.
	Logger *slog.Logger
}

// NewTransport talks to node agents over tlsCfg (nil: the system's roots
// and no client certificate), verifying each agent's serving certificate
// for the node's address, as kube-apiserver does with
// --kubelet-certificate-authority; HTTP/1.1 only so that upgrades (exec
// streams) work.
func NewTransport(tlsCfg *tls.Config) *http.Transport {
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &http.Transport{
		TLSClientConfig: tlsCfg.Clone(),
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// podTarget finds the pod, its container and the agent endpoint of its node.
func (p *Proxy) podTarget(r *http.Request, info endpoints.RequestInfo) (*corev1.Pod, string, string, error) {
	pod, container, err := p.podContainer(r, info)
	if err != nil {
		return nil, "", "", err
	}
	if pod.Spec.NodeName == "" {
		return nil, "", "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	hostPort, err := p.nodeEndpoint(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return nil, "", "", err
	}
	return pod, container, hostPort, nil
}

// podContainer finds the pod and the container the request names (or the
// only one).
func (p *Proxy) podContainer(r *http.Request, info endpoints.RequestInfo) (*corev1.Pod, string, error) {
	pod, err := p.Objects.Pod(r.Context(), info.Namespace, info.Name)
	if err != nil {
		return nil, "", err
	}
	container, err := pickContainer(pod, r.URL.Query().Get("container"))
	if err != nil {
		return nil, "", err
	}
	return pod, container, nil
}

// nodeEndpoint is host:port of the agent of a node.
func (p *Proxy) nodeEndpoint(ctx context.Context, nodeName string) (string, error) {
	node, err := p.Objects.Node(ctx, nodeName)
	if err != nil {
		return "", err
	}
	host := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			host = a.Address
			break
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return "", apierrors.NewBadRequest(fmt.Sprintf("node %s has no kubelet endpoint", node.Name))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

func pickContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		var names, inits []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.InitContainers {
			inits = append(inits, c.Name)
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: %v", inits)
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == name {
				return name, nil
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// Log proxies pods/log to the agent's containerLogs endpoint. A pod
// not scheduled yet has no log: an empty answer (204), as upstream's
// LogLocation gives no location for it. An error answer of the agent
// becomes an API Status, as upstream's response checker makes it.
func (p *Proxy) Log(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	pod, container, err := p.podContainer(r, info)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	if pod.Spec.NodeName == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	hostPort, err := p.nodeEndpoint(r.Context(), pod.Spec.NodeName)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	q := url.Values{}
	for _, k := range []string{"follow", "previous", "tailLines", "sinceSeconds", "sinceTime", "timestamps", "limitBytes"} {
		if v, ok := r.URL.Query()[k]; ok {
			q[k] = v
		}
	}
	target := &url.URL{Scheme: "https", Host: hostPort,
		Path: fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container), RawQuery: q.Encode()}
	p.proxyTo(w, r, target, func(code int, body string) error { return logError(code, body, pod.Name) })
}

// maxErrorBody bounds how much of an agent's error answer is read.
const maxErrorBody = 50000

// logError is the API error for a non-2xx answer of the agent to a log
// request, as upstream's generic response checker for pods/log builds it:
// the agent's text is the message of a BadRequest or InternalError; other
// codes get the generic message of their code.
func logError(code int, body, pod string) error {
	body = strings.TrimSuffix(body, "\n") // http.Error's newline; the kubelet sends none
	switch code {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(body)
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(body))
	}
	return apierrors.NewGenericServerResponse(code, "", corev1.Resource("pods/log"), pod, body, 0, false)
}

// Exec proxies pods/exec and pods/attach, upgrades included.
func (p *Proxy) Exec(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	pod, container, hostPort, err := p.podTarget(r, info)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	in := r.URL.Query()
	q := url.Values{}
	q["command"] = in["command"]
	for from, to := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
		if query.Bool(in, from) {
			q.Set(to, "1")
		}
	}
	target := &url.URL{Scheme: "https", Host: hostPort,
		Path: fmt.Sprintf("/%s/%s/%s/%s", info.Subresource, pod.Namespace, pod.Name, container), RawQuery: q.Encode()}
	p.proxyTo(w, r, target, nil)
}

// Node serves nodes/NAME/proxy/PATH: the request goes to the node's
// agent (the kubelet's endpoints: /pods, /healthz, /containerLogs, ...)
// with the server's kubelet client certificate (and Token when set), as
// kube-apiserver's node proxy does.
func (p *Proxy) Node(w http.ResponseWriter, r *http.Request, info endpoints.RequestInfo) {
	endpoint, err := p.nodeEndpoint(r.Context(), info.Name)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	target := &url.URL{Scheme: "https", Host: endpoint, Path: "/" + info.ProxyPath, RawQuery: r.URL.RawQuery}
	p.proxyTo(w, r, target, nil)
}

// proxyTo forwards the request to target with the Transport's client
// certificate and the Token, if any. With answerError set, a non-2xx
// answer is read and replaced by the error it returns (written as a
// Status); without, it passes through as it is.
func (p *Proxy) proxyTo(w http.ResponseWriter, r *http.Request, target *url.URL, answerError func(code int, body string) error) {
	token := p.Token
	rp := &httputil.ReverseProxy{
		Transport:     p.Transport,
		FlushInterval: -1,
		// A stream the client stopped reading (a followed log at the end of
		// `batchlet run`) ends in a copy error that the proxy logs; without
		// an http.Server above the handler (the in-process transport) it logs
		// instead of aborting. That is the client's doing, not a server
		// fault: the server's logger has it at debug, not Go's global log.
		ErrorLog: slog.NewLogLogger(p.Logger.Handler(), slog.LevelDebug),
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization")
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if answerError == nil || (resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent) {
				return nil
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("read node agent answer: %w", err))
			}
			return answerError(resp.StatusCode, string(body))
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				endpoints.WriteError(w, err)
				return
			}
			endpoints.WriteError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach node agent: %v", err)))
		},
	}
	rp.ServeHTTP(w, r)
}
