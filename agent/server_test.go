package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/process"
)

// processHarness runs the agent with the process runtime and its endpoints.
func processHarness(t *testing.T) (*Agent, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	rt, err := process.New(process.Config{RootDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Client: client, NodeName: "node-1", Runtime: rt, Token: "secret",
		Logger: slog.New(slog.DiscardHandler), ShutdownGracePeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, client
}

func waitPod(t *testing.T, client *fake.Clientset, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && cond(p) {
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pod %s: condition not reached", name)
	return nil
}

func restConfig(a *Agent) *rest.Config {
	return &rest.Config{Host: "https://127.0.0.1:" + itoa(a.Port()), BearerToken: "secret",
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestLogsAndExecEndpoints(t *testing.T) {
	a, client := processHarness(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo hello; sleep 0.2; echo oops >&2; sleep 60"},
			Env: []corev1.EnvVar{{Name: "GREETING", Value: "hi"}},
		}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, "web", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+itoa(a.Port())+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/containerLogs/default/web/main", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("bad token: status %d", code)
	}
	if code, list := get("/pods", "secret"); code != http.StatusOK || !strings.Contains(list, `"kind":"PodList"`) || !strings.Contains(list, `"name":"web"`) {
		t.Fatalf("/pods: %d %s", code, list)
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(body, "oops") {
		_, body = get("/containerLogs/default/web/main", "secret")
		time.Sleep(10 * time.Millisecond)
	}
	if body != "hello\noops\n" {
		t.Fatalf("logs %q", body)
	}
	if _, tail := get("/containerLogs/default/web/main?tailLines=1", "secret"); tail != "oops\n" {
		t.Fatalf("tailLines=1: %q", tail)
	}
	if _, lim := get("/containerLogs/default/web/main?limitBytes=3", "secret"); lim != "hel" {
		t.Fatalf("limitBytes=3: %q", lim)
	}
	if _, ts := get("/containerLogs/default/web/main?timestamps=true&tailLines=1", "secret"); !strings.HasSuffix(ts, "Z oops\n") {
		t.Fatalf("timestamps: %q", ts)
	}
	if code, msg := get("/containerLogs/default/web/main?previous=true", "secret"); code != http.StatusBadRequest || !strings.Contains(msg, `previous terminated container "main" in pod "web" not found`) {
		t.Fatalf("previous: %d %q", code, msg)
	}

	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			u, _ := url.Parse(restConfig(a).Host + "/exec/default/web/main?command=sh&command=-c&command=read+x%3B+echo+$GREETING+$x%3B+echo+err+>%262%3B+exit+5&input=1&output=1&error=1")
			var ex remotecommand.Executor
			var err error
			if proto == "websocket" {
				ex, err = remotecommand.NewWebSocketExecutor(restConfig(a), "GET", u.String())
			} else {
				ex, err = remotecommand.NewSPDYExecutor(restConfig(a), "POST", u)
			}
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{
				Stdin: strings.NewReader("there\n"), Stdout: &stdout, Stderr: &stderr})
			var ce exec.CodeExitError
			if !errors.As(err, &ce) || ce.Code != 5 {
				t.Fatalf("want exit code 5, got %v (stdout %q stderr %q)", err, stdout.String(), stderr.String())
			}
			if stdout.String() != "hi there\n" || stderr.String() != "err\n" {
				t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

func TestSubdomainHostsEntries(t *testing.T) {
	a, client := processHarness(t)
	rt := a.cfg.Runtime.(*process.Runtime)
	if !rt.Namespaces() {
		t.Skip("namespaces unavailable: /etc/hosts is the host's")
	}
	mk := func(name string) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "node-1", Hostname: name, Subdomain: "sd", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "x", Command: []string{"sleep", "60"}}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("w-0")
	p0 := waitPod(t, client, "w-0", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	mk("w-1")
	p1 := waitPod(t, client, "w-1", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	hosts := func(uid types.UID) string {
		var out bytes.Buffer
		if err := rt.Exec(context.Background(), uid, "main", []string{"cat", "/etc/hosts"}, runtime.ExecStreams{Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	want0 := p0.Status.PodIP + "\tw-0.sd.default.svc.cluster.local\tw-0\n"
	want1 := p1.Status.PodIP + "\tw-1.sd.default.svc.cluster.local\tw-1\n"
	for _, uid := range []types.UID{p0.UID, p1.UID} {
		if h := hosts(uid); !strings.Contains(h, want0) || !strings.Contains(h, want1) {
			t.Fatalf("pod %s /etc/hosts:\n%s", uid, h)
		}
	}
}
