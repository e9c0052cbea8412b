package apiserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExecUpgradeIsProxied dials pods/exec as a WebSocket (what kubectl
// exec does first) and checks the upgrade and the stream pass through.
func TestExecUpgradeIsProxied(t *testing.T) {
	var gotQuery, gotPath string
	up := websocket.Upgrader{Subprotocols: []string{"v5.channel.k8s.io"}}
	agent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery, gotPath = r.URL.RawQuery, r.URL.Path
		if r.Header.Get("Authorization") != "Bearer node-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.BinaryMessage, append([]byte{1}, "hello\n"...))
	}))
	defer agent.Close()
	u, _ := url.Parse(agent.URL)
	port, _ := strconv.Atoi(u.Port())
	e := newTestEnv(t)
	e.srv.nodes.Token = "node-token"
	e.trustAgent(agent)
	node, err := e.client.CoreV1().Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: u.Hostname()}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wsURL := "ws" + strings.TrimPrefix(e.http.URL, "http") + "/api/v1/namespaces/default/pods/p/exec?command=echo&command=hello&stdout=true&stderr=true"
	d := websocket.Dialer{Subprotocols: []string{"v5.channel.k8s.io"}}
	c, resp, err := d.Dial(wsURL, http.Header{"Authorization": {"Bearer " + testToken}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	if c.Subprotocol() != "v5.channel.k8s.io" {
		t.Fatalf("subprotocol = %q", c.Subprotocol())
	}
	_, msg, err := c.ReadMessage()
	if err != nil || string(msg) != "\x01hello\n" {
		t.Fatalf("message %q %v", msg, err)
	}
	q, _ := url.ParseQuery(gotQuery)
	if gotPath != "/exec/default/p/main" || strings.Join(q["command"], " ") != "echo hello" || q.Get("output") != "1" || q.Get("error") != "1" || q.Get("input") != "" {
		t.Fatalf("agent got %s?%s", gotPath, gotQuery)
	}
}
