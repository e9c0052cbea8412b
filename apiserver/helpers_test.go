package apiserver

import (
	"context"
	"crypto/x509"
	"net/http/httptest"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/memory"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const testToken = "test-token"

// newTestBackend makes the store of a test server; TestOverBolt switches
// it to the durable backend.
var newTestBackend = func(t *testing.T) storage.Backend { return memory.New(10000) }

type testEnv struct {
	srv    *Server
	store  storage.Backend
	http   *httptest.Server
	cfg    *rest.Config
	client kubernetes.Interface
	ctx    context.Context
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	return newTestEnvWith(t, nil)
}

// newTestEnvWith lets a test adjust the Config before the server starts.
func newTestEnvWith(t *testing.T, adjust func(*Config)) *testEnv {
	t.Helper()
	store := newTestBackend(t)
	cfg := Config{Storage: store, Authenticator: endpoints.TokenMap{testToken: endpoints.AdminUser()}}
	if adjust != nil {
		adjust(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Run(ctx) }()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	restCfg := &rest.Config{Host: hs.URL, BearerToken: testToken, QPS: -1}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &testEnv{srv: srv, store: store, http: hs, cfg: restCfg, client: client, ctx: ctx}
}

func testJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
		}}},
	}
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func newClientFor(s *Server) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(s.InProcessConfig())
}

// trustAgent makes the server's node transport verify the test agent's
// certificate, as a real server verifies agents against its CA.
func (e *testEnv) trustAgent(agent *httptest.Server) {
	pool := x509.NewCertPool()
	pool.AddCert(agent.Certificate())
	e.srv.nodes.Transport.TLSClientConfig.RootCAs = pool
}

func ptrTo[T any](v T) *T { return &v }
