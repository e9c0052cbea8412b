package serving

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

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

// startTLS starts srv over TLS on loopback the way the control plane does
// (batched when batched is set) and returns its URL.
func startTLS(b testing.TB, h http.Handler, mode string) string {
	hs := httptest.NewUnstartedServer(h) // for its certificate only
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}}
	if mode != "nethttp" {
		if err := Configure(srv, nil); err != nil {
			b.Fatal(err)
		}
	}
	if mode == "batched" {
		ln = Listener(ln)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	b.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// BenchmarkStaticBody serves a body of a 10,000-pod list's size (JSON,
// protobuf) from memory over HTTP/2 and TLS to client-go: the transport's
// floor under a list, with net/http's own HTTP/2 server and with Configure's.
func BenchmarkStaticBody(b *testing.B) {
	for _, size := range []int{16570000, 7500000} {
		body := make([]byte, size)
		for i := range body {
			body[i] = 'a' + byte(i%26)
		}
		for _, chunk := range []int{64 << 10, 256 << 10, 1 << 20} {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for off := 0; off < len(body); off += chunk {
					_, _ = w.Write(body[off:min(off+chunk, len(body))])
				}
			})
			for _, mode := range []string{"nethttp", "xnet", "batched"} {
				url := startTLS(b, h, mode)
				cfg := &rest.Config{Host: url, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
				kube, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					b.Fatal(err)
				}
				rc := kube.CoreV1().RESTClient()
				var buf bytes.Buffer
				b.Run(fmt.Sprintf("%.2fMB/chunk=%d/%s", float64(size)/(1<<20), chunk, mode), func(b *testing.B) {
					defer reportCPU(b)()
					for b.Loop() {
						rd, err := rc.Get().Namespace("default").Resource("pods").Stream(context.Background())
						if err != nil {
							b.Fatal(err)
						}
						// Into a reused buffer, as the api bench reads: its
						// reads take all the body that has arrived, so the
						// client's window updates follow the server's frames.
						buf.Reset()
						n, _ := buf.ReadFrom(rd)
						_ = rd.Close()
						if n != int64(size) {
							b.Fatalf("read %d bytes, want %d", n, size)
						}
					}
				})
			}
		}
	}
}
