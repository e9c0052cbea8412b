package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// listBenchPods is how many pods the list benchmarks store (the api
// bench's 10,000).
const listBenchPods = 10000

// listBenchServer is a server over a bolt store holding listBenchPods pods.
func listBenchServer(b *testing.B) *Server {
	b.Helper()
	store, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	srv, err := New(Config{Storage: store, Authenticator: endpoints.TokenMap{testToken: endpoints.AdminUser()}})
	if err != nil {
		b.Fatal(err)
	}
	client, err := newClientFor(srv)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	err = inParallelTest(listBenchPods, 8, func(i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%06d", i), Labels: map[string]string{"group": fmt.Sprintf("g%d", i%100), "bench": "p"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}}},
		}
		_, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

type discardResponseWriter struct {
	h http.Header
	n int
}

func (w *discardResponseWriter) Header() http.Header         { return w.h }
func (w *discardResponseWriter) WriteHeader(int)             {}
func (w *discardResponseWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// BenchmarkListPods lists 10,000 pods from the store alone, through the
// handler into a discarding writer, and over HTTP/2 and TLS with client-go
// (reading the body into a fresh buffer as DoRaw does, and streaming it).
func BenchmarkListPods(b *testing.B) {
	srv := listBenchServer(b)
	res := srv.served.Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	ctx := context.Background()
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			if _, err := srv.store.List(ctx, genericstore.KeyPrefix(res, "default"), storage.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	accept := map[string]string{
		"-protobuf": runtime.ContentTypeProtobuf + ",application/json",
		"-table":    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", // kubectl get's, whose pages are of 500
	}
	for _, sel := range []string{"", "?labelSelector=group%3Dg7", "-protobuf", "-table"} {
		b.Run("handler"+sel, func(b *testing.B) {
			defer reportCPU(b)()
			query := sel
			if accept[sel] != "" {
				query = ""
			}
			if sel == "-table" {
				query = "?limit=500"
			}
			req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods"+query, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if accept[sel] != "" {
				req.Header.Set("Accept", accept[sel])
			}
			for b.Loop() {
				w := &discardResponseWriter{h: http.Header{}}
				srv.Handler().ServeHTTP(w, req)
				if w.n < 1000 {
					b.Fatal("short")
				}
			}
		})
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.EnableHTTP2 = true
	hs.StartTLS()
	defer hs.Close()
	cfg := &rest.Config{Host: hs.URL, BearerToken: testToken, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rc := kube.CoreV1().RESTClient()
	pbCfg := rest.CopyConfig(cfg)
	pbCfg.ContentType = runtime.ContentTypeProtobuf
	pbCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + ",application/json"
	pb, err := kubernetes.NewForConfig(pbCfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("https-stream-protobuf", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			rd, err := pb.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Stream(ctx)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, rd)
			_ = rd.Close()
		}
	})
	b.Run("https-doraw", func(b *testing.B) {
		for b.Loop() {
			if _, err := rc.Get().Namespace("default").Resource("pods").DoRaw(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	// limit=100000 takes the path of paginated lists (the whole scan
	// before the first byte), for comparison with the streamed answer.
	for name, limit := range map[string]string{"https-stream": "", "https-stream-limit": "100000"} {
		b.Run(name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				req := rc.Get().Namespace("default").Resource("pods")
				if limit != "" {
					req = req.Param("limit", limit)
				}
				rd, err := req.Stream(ctx)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, rd)
				_ = rd.Close()
			}
		})
	}
}

// BenchmarkStaticH2 serves a body from memory over HTTP/2 and TLS to
// client-go, written in chunks of several sizes: the transport's share of
// a list's latency, for comparison with BenchmarkListPods/https-stream.
// The sizes are those of the api bench's 10,000-pod lists in protobuf
// (7.15 MB) and JSON (15.8 MB), and an 11.2 MB body in chunks that make
// whole HTTP/2 frames or TLS records.
func BenchmarkStaticH2(b *testing.B) {
	for _, tc := range []struct{ size, chunk int }{
		{7500000, 64 << 10}, {16570000, 64 << 10},
		{11200000, 64 << 10}, {11200000, 16384 - 9}, {11200000, 16384},
	} {
		body := make([]byte, tc.size)
		for i := range body {
			body[i] = 'a' + byte(i%26)
		}
		hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for off := 0; off < len(body); off += tc.chunk {
				_, _ = w.Write(body[off:min(off+tc.chunk, len(body))])
			}
		}))
		hs.EnableHTTP2 = true
		hs.StartTLS()
		cfg := &rest.Config{Host: hs.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		rc := kube.CoreV1().RESTClient()
		b.Run(fmt.Sprintf("%.2fMB/%d", float64(tc.size)/(1<<20), tc.chunk), func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				rd, err := rc.Get().Namespace("default").Resource("pods").Stream(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, rd)
				_ = rd.Close()
			}
		})
		hs.Close()
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}
