package serving

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingConn is a net.Conn whose writes are recorded one by one.
type recordingConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func TestBatchConnGathersTheRecordsOfOneWrite(t *testing.T) {
	rec := &recordingConn{}
	c := &batchConn{Conn: rec, buffers: newBatchBuffers()}
	// Outside a flushingConn write (handshake, alerts, HTTP/1.1): through.
	_, _ = c.Write([]byte("hello"))
	if len(rec.writes) != 1 {
		t.Fatalf("a write outside a batch made %d writes, want 1", len(rec.writes))
	}
	c.begin(0, 0)
	for _, r := range []string{"r1", "r2", "r3"} {
		_, _ = c.Write([]byte(r))
	}
	if len(rec.writes) != 1 {
		t.Fatalf("records were written before the batch ended: %q", rec.writes)
	}
	if err := c.end(); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 2 || string(rec.writes[1]) != "r1r2r3" {
		t.Fatalf("writes %q, want [hello r1r2r3]", rec.writes)
	}
	// A batch larger than the limit goes out in pieces, in order.
	c.begin(0, 0)
	big := bytes.Repeat([]byte("x"), 16<<10)
	for range 9 {
		_, _ = c.Write(big)
	}
	_ = c.end()
	var got []byte
	for _, w := range rec.writes[2:] {
		if len(w) > batchLimit {
			t.Errorf("a write of %d bytes, over the limit %d", len(w), batchLimit)
		}
		got = append(got, w...)
	}
	if !bytes.Equal(got, bytes.Repeat(big, 9)) {
		t.Errorf("the batched bytes differ from those written")
	}
	if c.buf != nil {
		t.Errorf("an idle connection keeps its buffer")
	}
}

// selfSigned returns a certificate for name signed by its own key.
func selfSigned(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{name},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestServesHTTP2AndHTTP1 serves through Configure and Listener as the
// control plane does: a streamed answer (each part must reach the client
// before the handler writes the next: nothing may wait in a batch), a
// large one byte for byte, the client's certificate seen by the handler,
// over HTTP/2 and HTTP/1.1.
func TestServesHTTP2AndHTTP1(t *testing.T) {
	body := make([]byte, 3<<20+12345)
	_, _ = rand.Read(body)
	acked := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) != 1 || r.TLS.PeerCertificates[0].Subject.CommonName != "client" {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Proto", r.Proto)
		switch r.URL.Path {
		case "/stream":
			for i := range 3 {
				_, _ = io.WriteString(w, strings.Repeat(string(rune('a'+i)), 10))
				w.(http.Flusher).Flush()
				select {
				case <-acked:
				case <-r.Context().Done():
					return
				}
			}
		case "/big":
			for off := 0; off < len(body); off += 100000 {
				_, _ = w.Write(body[off:min(off+100000, len(body))])
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serverCert := selfSigned(t, "server", x509.ExtKeyUsageServerAuth)
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{serverCert},
		NextProtos: []string{"h2", "http/1.1"}, ClientAuth: tls.RequireAnyClientCert}}
	if err := Configure(srv, nil); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(Listener(ln), "", "") }()
	defer func() { _ = srv.Close() }()

	clientCert := selfSigned(t, "client", x509.ExtKeyUsageClientAuth)
	for _, proto := range []string{"HTTP/2.0", "HTTP/1.1"} {
		t.Run(proto, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{clientCert}},
				ForceAttemptHTTP2: proto == "HTTP/2.0"}
			if proto == "HTTP/1.1" {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			url := "https://" + ln.Addr().String()

			req, _ := http.NewRequestWithContext(ctx, "GET", url+"/stream", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Proto") != proto {
				t.Fatalf("status %d, proto %q; want 200 over %s", resp.StatusCode, resp.Header.Get("X-Proto"), proto)
			}
			for i := range 3 {
				part := make([]byte, 10)
				if _, err := io.ReadFull(resp.Body, part); err != nil {
					t.Fatalf("part %d of the stream: %v (held in a batch?)", i, err)
				}
				if want := strings.Repeat(string(rune('a'+i)), 10); string(part) != want {
					t.Fatalf("part %d %q, want %q", i, part, want)
				}
				acked <- struct{}{}
			}
			_ = resp.Body.Close()

			req, _ = http.NewRequestWithContext(ctx, "GET", url+"/big", nil)
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("big answer: %d bytes (err %v), want the %d written", len(got), err, len(body))
			}
		})
	}
}

// TestBatchWrittenWithTheWritesLastRecord checks the plaintext count on
// real TLS records: the batch leaves when the record that carries the
// write's last byte arrives, inside crypto/tls's Write (where a Close
// breaks it at once), not only at end.
func TestBatchWrittenWithTheWritesLastRecord(t *testing.T) {
	serverCert := selfSigned(t, "server", x509.ExtKeyUsageServerAuth)
	for _, tc := range []struct {
		name    string
		version uint16
		suites  []uint16
	}{
		{"TLS1.3", tls.VersionTLS13, nil},
		{"TLS1.2-AES-GCM", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
		{"TLS1.2-ChaCha20", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sraw, craw := net.Pipe()
			batch := &batchConn{Conn: sraw, buffers: newBatchBuffers()}
			server := tls.Server(batch, &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tc.version, MaxVersion: tc.version, CipherSuites: tc.suites})
			client := tls.Client(craw, &tls.Config{InsecureSkipVerify: true, MinVersion: tc.version, MaxVersion: tc.version, CipherSuites: tc.suites})
			received := make(chan []byte, 1)
			go func() {
				if err := client.Handshake(); err != nil {
					received <- nil
					return
				}
				b, _ := io.ReadAll(client)
				received <- b
			}()
			if err := server.Handshake(); err != nil {
				t.Fatal(err)
			}
			fc := newFlushingConn(server, batch)
			if fc.overhead == 0 {
				t.Fatalf("no record overhead known for %s", tc.name)
			}
			var sent []byte
			for _, size := range []int{1, 100, 16384, 16385, 65536, 100000} {
				p := bytes.Repeat([]byte{byte(size)}, size)
				batch.begin(len(p), fc.overhead)
				if _, err := server.Write(p); err != nil {
					t.Fatal(err)
				}
				batch.mu.Lock()
				left, pending := len(batch.buf), batch.pending
				batch.mu.Unlock()
				if left != 0 || pending != 0 {
					t.Errorf("write of %d bytes: %d bytes still gathered, %d plaintext bytes uncounted once crypto/tls's Write returned", size, left, pending)
				}
				if err := batch.end(); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, p...)
			}
			_ = server.Close()
			if got := <-received; !bytes.Equal(got, sent) {
				t.Errorf("the client read %d bytes, want the %d written", len(got), len(sent))
			}
		})
	}
}
