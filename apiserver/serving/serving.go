// Package serving sets up the API server's HTTPS listener: HTTP/2 over TLS
// with golang.org/x/net/http2, whose connections hand each HTTP/2 write's
// TLS records to the kernel in one write, not one write per record.
package serving

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"sync"

	"golang.org/x/net/http2"
)

// batchLimit bounds the bytes of TLS records a connection gathers before
// it writes them (an HTTP/2 write larger than this goes out in pieces of
// about this size). 64 KB is loopback's segment size and a fraction of a
// socket's send buffer.
const batchLimit = 64 << 10

// Configure makes srv speak HTTP/2 over TLS through golang.org/x/net/http2
// (as kube-apiserver does), with the connections of a Listener batching
// the TLS records of each HTTP/2 write. Call it before serving, with
// srv.TLSConfig set.
func Configure(srv *http.Server, conf *http2.Server) error {
	if conf == nil {
		conf = &http2.Server{}
	}
	if err := http2.ConfigureServer(srv, conf); err != nil {
		return fmt.Errorf("configure HTTP/2: %w", err)
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		opts := &http2.ServeConnOpts{Handler: h, BaseConfig: hs}
		// net/http hands its per-connection context down through the
		// handler, as x/net/http2's own TLSNextProto reads it.
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			opts.Context = bc.BaseContext()
		}
		var conn net.Conn = c
		if b, ok := c.NetConn().(*batchConn); ok {
			conn = newFlushingConn(c, b)
		}
		conf.ServeConn(conn, opts)
	}
	return nil
}

// Listener wraps ln's connections so that those Configure serves over
// HTTP/2 can gather TLS records; others write as before.
func Listener(ln net.Listener) net.Listener {
	return &batchListener{Listener: ln, buffers: newBatchBuffers()}
}

type batchListener struct {
	net.Listener
	buffers *sync.Pool // of *[]byte: the buffers of connections between writes
}

func newBatchBuffers() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 0, batchLimit); return &b }}
}

func (l *batchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &batchConn{Conn: c, buffers: l.buffers}, nil
}

// batchConn sits under crypto/tls. crypto/tls writes each record (at most
// 16 KB of plaintext) with its own write: on loopback that is a syscall,
// a TCP segment and a wake-up of the reader per 16 KB. While one of its
// flushingConn's writes is under way, batchConn gathers the records into
// a buffer and writes them together; outside those writes (handshake,
// alerts, HTTP/1.1) it writes through.
//
// It writes the batch when the record carrying the write's last plaintext
// byte arrives, still inside crypto/tls's Write: a tls.Conn.Close meanwhile
// (a peer that stopped reading) then breaks the write at once, as without
// batching, instead of waiting up to 5 s to send its close_notify behind
// it. Should the count of plaintext bytes miss, end writes the rest.
type batchConn struct {
	net.Conn
	buffers  *sync.Pool // its listener's
	mu       sync.Mutex
	writers  int // flushingConn writes under way
	pending  int // plaintext bytes of the write under way not yet in a record
	overhead int // a record's bytes beyond its plaintext (header apart); 0: unknown, no count
	buf      []byte
	err      error
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.writers == 0 || len(p) >= batchLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	if len(c.buf)+len(p) > batchLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	if c.buf == nil {
		c.buf = (*c.buffers.Get().(*[]byte))[:0]
	}
	c.buf = append(c.buf, p...)
	if c.overhead > 0 && len(p) >= recordHeaderLen {
		c.pending -= int(binary.BigEndian.Uint16(p[3:recordHeaderLen])) - c.overhead
		if c.pending <= 0 {
			return len(p), c.flushLocked()
		}
	}
	return len(p), nil
}

// recordHeaderLen is a TLS record header's length: type, version, length.
const recordHeaderLen = 5

// begin opens a flushingConn write of plain bytes in records of overhead
// bytes more than their plaintext each (0 when unknown).
func (c *batchConn) begin(plain, overhead int) {
	c.mu.Lock()
	c.writers++
	c.pending, c.overhead = plain, overhead
	if c.writers > 1 {
		// Concurrent writes (HTTP/2 makes none) share the count: no count.
		c.overhead = 0
	}
	c.mu.Unlock()
}

// end closes a flushingConn write: what it gathered goes out before it
// returns, so nothing waits in the buffer for a later write.
func (c *batchConn) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writers--
	c.overhead = 0
	err := c.flushLocked()
	if c.writers == 0 && c.buf != nil {
		// Idle connections keep no buffer.
		buf := c.buf
		c.buffers.Put(&buf)
		c.buf = nil
	}
	return err
}

func (c *batchConn) flushLocked() error {
	if c.err != nil || len(c.buf) == 0 {
		return c.err
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	if err != nil {
		c.err = err
	}
	return err
}

// flushingConn is the TLS connection HTTP/2 writes to: each of its writes
// lets the batchConn under it gather the records and flushes them at the
// end.
type flushingConn struct {
	*tls.Conn
	batch    *batchConn
	overhead int // see recordOverhead
}

func newFlushingConn(c *tls.Conn, batch *batchConn) *flushingConn {
	return &flushingConn{Conn: c, batch: batch, overhead: recordOverhead(c.ConnectionState())}
}

// recordOverhead is how many bytes an application data record of the
// connection's cipher carries beyond its plaintext and its header: TLS 1.3
// adds the inner content type and the AEAD tag (crypto/tls pads nothing),
// TLS 1.2's AES-GCM an explicit nonce and the tag, ChaCha20-Poly1305 the
// tag. 0 (no count) for anything else.
func recordOverhead(cs tls.ConnectionState) int {
	const tag = 16
	switch {
	case cs.Version == tls.VersionTLS13:
		return 1 + tag
	case cs.Version != tls.VersionTLS12:
		return 0
	}
	switch cs.CipherSuite {
	case tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:
		return 8 + tag
	case tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256:
		return tag
	}
	return 0
}

func (c *flushingConn) Write(p []byte) (int, error) {
	c.batch.begin(len(p), c.overhead)
	n, err := c.Conn.Write(p)
	if ferr := c.batch.end(); err == nil && ferr != nil {
		return n, fmt.Errorf("write TLS records: %w", ferr)
	}
	return n, err
}
