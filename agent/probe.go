package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/batchlet/batchlet/runtime"
)

// prober runs the readiness probes of one pod. A nil *prober has no probes.
type prober struct {
	a      *Agent
	key    string
	pod    *corev1.Pod
	mu     sync.Mutex
	ready  map[string]bool
	stopCh chan struct{}
	once   sync.Once
}

// startProber starts one loop per container with a readiness probe.
func (a *Agent) startProber(pod *corev1.Pod, key string) *prober {
	var probed []corev1.Container
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe != nil {
			probed = append(probed, c)
		}
	}
	if len(probed) == 0 {
		return nil
	}
	p := &prober{a: a, key: key, pod: pod, ready: map[string]bool{}, stopCh: make(chan struct{})}
	for _, c := range probed {
		p.ready[c.Name] = false
		go p.loop(c)
	}
	return p
}

func (p *prober) stop() {
	if p != nil {
		p.once.Do(func() { close(p.stopCh) })
	}
}

// results copies the readiness of probed containers.
func (p *prober) results() map[string]bool {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.ready))
	for k, v := range p.ready {
		out[k] = v
	}
	return out
}

func (p *prober) set(name string, ready bool) {
	p.mu.Lock()
	changed := p.ready[name] != ready
	p.ready[name] = ready
	p.mu.Unlock()
	if changed {
		p.a.queue.Add(p.key)
	}
}

// wait sleeps d on the agent clock; false once stopped.
func (p *prober) wait(d time.Duration) bool {
	t := p.a.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-p.stopCh:
		return false
	}
}

// loop probes container c: initialDelaySeconds after each start, then every
// periodSeconds, with the success and failure thresholds.
func (p *prober) loop(c corev1.Container) {
	pr := c.ReadinessProbe
	period := secondsOr(pr.PeriodSeconds, 10)
	successThreshold := int(max(pr.SuccessThreshold, 1))
	failureThreshold := int(max(pr.FailureThreshold, 1))
	if pr.FailureThreshold == 0 {
		failureThreshold = 3
	}
	lastID, succ, fail := "", 0, 0
	for {
		cs, running := p.running(c.Name)
		if !running {
			p.set(c.Name, false)
			lastID, succ, fail = "", 0, 0
			if !p.wait(200 * time.Millisecond) {
				return
			}
			continue
		}
		if cs.ContainerID != lastID {
			lastID, succ, fail = cs.ContainerID, 0, 0
			if !p.wait(secondsOr(pr.InitialDelaySeconds, 0)) {
				return
			}
		}
		if p.probe(c, pr) {
			succ, fail = succ+1, 0
			if succ >= successThreshold {
				p.set(c.Name, true)
			}
		} else {
			succ, fail = 0, fail+1
			if fail >= failureThreshold {
				p.set(c.Name, false)
			}
		}
		if !p.wait(period) {
			return
		}
	}
}

func secondsOr(v int32, def int) time.Duration {
	if v <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(v) * time.Second
}

func (p *prober) running(name string) (corev1.ContainerStatus, bool) {
	rs, ok := p.a.cfg.Runtime.PodStatus(p.pod.UID)
	if !ok {
		return corev1.ContainerStatus{}, false
	}
	cs := findStatus(rs.ContainerStatuses, name)
	if cs == nil {
		return corev1.ContainerStatus{}, false
	}
	return *cs, cs.State.Running != nil
}

// probe runs one exec, tcpSocket or httpGet check.
func (p *prober) probe(c corev1.Container, pr *corev1.Probe) bool {
	ctx, cancel := context.WithTimeout(context.Background(), secondsOr(pr.TimeoutSeconds, 1))
	defer cancel()
	host := p.pod.Status.PodIP
	if sp, ok := p.a.cfg.Runtime.(interface{ SimulatedProbes() bool }); ok && sp.SimulatedProbes() && pr.Exec == nil {
		return true
	}
	switch {
	case pr.Exec != nil:
		err := p.a.cfg.Runtime.Exec(ctx, p.pod.UID, c.Name, pr.Exec.Command, runtime.ExecStreams{Stdout: io.Discard, Stderr: io.Discard})
		return err == nil
	case pr.TCPSocket != nil:
		if pr.TCPSocket.Host != "" {
			host = pr.TCPSocket.Host
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, portOf(c, pr.TCPSocket.Port)))
		if err != nil {
			return false
		}
		conn.Close()
		return true
	case pr.HTTPGet != nil:
		g := pr.HTTPGet
		if g.Host != "" {
			host = g.Host
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, portOf(c, g.Port)), g.Path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	}
	return true
}

// portOf resolves a numeric or named container port.
func portOf(c corev1.Container, port intstr.IntOrString) string {
	if port.Type == intstr.Int {
		return strconv.Itoa(port.IntValue())
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	return port.StrVal
}
