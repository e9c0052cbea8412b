package apiserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// agentStub serves every request with code and body, as a node agent
// refusing a log request would.
type agentStub struct {
	code int
	body string
}

// proxyEnv is a test API server with node n1 served by an agent stub.
func proxyEnv(t *testing.T, stub *agentStub) *testEnv {
	t.Helper()
	agent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stub.code/100 != 2 {
			http.Error(w, stub.body, stub.code)
			return
		}
		_, _ = w.Write([]byte(stub.body))
	}))
	t.Cleanup(agent.Close)
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
	for _, p := range []*corev1.Pod{testPod("fin", "n1"), testPod("pending", "")} {
		if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestLogErrorsBecomeStatus: an agent's error answer to pods/log reaches
// the client as the Status upstream's response checker builds, so kubectl
// prints the agent's message.
func TestLogErrorsBecomeStatus(t *testing.T) {
	cases := map[string]struct {
		code       int
		body       string
		wantReason metav1.StatusReason
		wantMsg    string
	}{
		"no previous container": {400, `previous terminated container "main" in pod "fin" not found`,
			metav1.StatusReasonBadRequest, `previous terminated container "main" in pod "fin" not found`},
		"waiting container": {400, `container "main" in pod "fin" is waiting to start: CreateContainerConfigError`,
			metav1.StatusReasonBadRequest, `container "main" in pod "fin" is waiting to start: CreateContainerConfigError`},
		"pod unknown to the agent": {404, "pod default/fin not found",
			metav1.StatusReasonNotFound, "the server could not find the requested resource ( pods/log fin)"},
		"agent failure": {500, "disk on fire",
			metav1.StatusReasonInternalError, "Internal error occurred: disk on fire"},
		"token refused": {401, "Unauthorized",
			metav1.StatusReasonUnauthorized, "the server has asked for the client to provide credentials ( pods/log fin)"},
	}
	stub := &agentStub{}
	e := proxyEnv(t, stub)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stub.code, stub.body = tc.code, tc.body
			code, resp := e.do(t, "GET", "/api/v1/namespaces/default/pods/fin/log?container=main&previous=true", "", "", nil, testToken)
			st := decodeStatus(t, resp)
			if code != tc.code || int(st.Code) != tc.code || st.Reason != tc.wantReason || st.Message != tc.wantMsg || st.Status != metav1.StatusFailure {
				t.Fatalf("got %d %s/%d %q, want %d %s %q", code, st.Reason, st.Code, st.Message, tc.code, tc.wantReason, tc.wantMsg)
			}
			// kubectl logs streams; it prints Error from server (<reason>): <message>.
			_, err := e.client.CoreV1().Pods("default").GetLogs("fin", &corev1.PodLogOptions{Container: "main", Previous: true}).Stream(e.ctx)
			if apierrors.ReasonForError(err) != tc.wantReason || err.Error() != tc.wantMsg {
				t.Fatalf("client error %v (%s), want %s %q", err, apierrors.ReasonForError(err), tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// TestLogOfUnscheduledPodIsEmpty: as upstream, pods/log of a pod without a
// node is an empty answer; exec and attach keep their error.
func TestLogOfUnscheduledPodIsEmpty(t *testing.T) {
	e := proxyEnv(t, &agentStub{code: 200, body: "must not be read"})
	code, body := e.do(t, "GET", "/api/v1/namespaces/default/pods/pending/log", "", "", nil, testToken)
	if code != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("log of an unscheduled pod: %d %q, want 204 and no body", code, body)
	}
	out, err := e.client.CoreV1().Pods("default").GetLogs("pending", &corev1.PodLogOptions{}).DoRaw(e.ctx)
	if err != nil || len(out) != 0 {
		t.Fatalf("client: %q %v, want an empty log", out, err)
	}
	code, body = e.do(t, "GET", "/api/v1/namespaces/default/pods/pending/log?container=nope", "", "", nil, testToken)
	if st := decodeStatus(t, body); code != 400 || st.Message != "container nope is not valid for pod pending" {
		t.Fatalf("bad container: %d %q", code, st.Message)
	}
	for _, sub := range []string{"exec?command=true&stdout=true", "attach?stdout=true"} {
		code, body := e.do(t, "POST", "/api/v1/namespaces/default/pods/pending/"+sub, "", "", nil, testToken)
		if st := decodeStatus(t, body); code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != "pod pending does not have a host assigned" {
			t.Fatalf("%s: %d %s %q", sub, code, st.Reason, st.Message)
		}
	}
	if got, _ := e.do(t, "GET", "/api/v1/namespaces/default/pods/fin/log", "", "", nil, testToken); got != 200 {
		t.Fatalf("log of a scheduled pod: %d", got)
	}
}
