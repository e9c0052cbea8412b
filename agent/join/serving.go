package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batchlet/batchlet/pki"
)

// Serving holds the agent's serving certificate: one signed by the
// cluster CA once issued, a fallback (self-signed) until then.
type Serving struct {
	mu       sync.Mutex
	cert     *tls.Certificate
	issued   chan struct{}
	fallback *tls.Certificate
}

// GetCertificate is the agent's tls.Config.GetCertificate.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil {
		return s.cert, nil
	}
	return s.fallback, nil
}

// ServingRequest says which serving certificate to get.
type ServingRequest struct {
	NodeName string
	// IPs and DNSNames the certificate covers (the node's addresses).
	IPs      []net.IP
	DNSNames []string
	// Dir keeps the key and the certificate.
	Dir string
	// Fallback serves until the certificate is issued.
	Fallback *tls.Certificate
	Logger   *slog.Logger
}

// NewServing loads the serving certificate kept in r.Dir if it still
// covers r's names, or asks for one with signer kubernetes.io/kubelet-
// serving (the kubelet's serverTLSBootstrap) in the background, waiting
// for it at most wait. A cluster whose signer does not answer in time gets
// the fallback, replaced once the certificate arrives.
func NewServing(ctx context.Context, client kubernetes.Interface, r ServingRequest, wait time.Duration) (*Serving, error) {
	s := &Serving{issued: make(chan struct{}), fallback: r.Fallback}
	certPath, keyPath := filepath.Join(r.Dir, ServingCertFile), filepath.Join(r.Dir, ServingKeyFile)
	if c, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && covers(c, r) {
		s.cert = &c
		return s, nil
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create certificate dir: %w", err)
	}
	key, err := pki.LoadOrCreateKey(keyPath)
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(s.issued)
		subject := pkix.Name{CommonName: NodeUserPrefix + r.NodeName, Organization: []string{GroupNodes}}
		certPEM, err := RequestCertificate(ctx, client, certificatesv1.KubeletServingSignerName, subject, r.IPs, r.DNSNames, key)
		if err != nil {
			r.Logger.Warn("no serving certificate from the cluster CA; serving a self-signed one", "node", r.NodeName, "err", err.Error())
			return
		}
		if err := s.install(certPEM, keyPath, certPath); err != nil {
			r.Logger.Warn("serving certificate", "node", r.NodeName, "err", err.Error())
			return
		}
		r.Logger.Info("serving certificate issued", "node", r.NodeName)
	}()
	select {
	case <-s.issued:
	case <-time.After(wait):
		r.Logger.Warn("serving certificate not issued yet; serving a self-signed one until it is", "node", r.NodeName, "waited", wait)
	case <-ctx.Done():
	}
	return s, nil
}

// install keeps the issued certificate and starts serving it.
func (s *Serving) install(certPEM []byte, keyPath, certPath string) error {
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("read serving key: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("load issued serving certificate: %w", err)
	}
	if err := pki.WriteFileAtomic(certPath, certPEM, 0o644); err != nil {
		return err
	}
	s.mu.Lock()
	s.cert = &c
	s.mu.Unlock()
	return nil
}

// covers reports whether c is unexpired and valid for every name of r.
func covers(c tls.Certificate, r ServingRequest) bool {
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil || time.Now().After(leaf.NotAfter) || leaf.Subject.CommonName != NodeUserPrefix+r.NodeName {
		return false
	}
	for _, ip := range r.IPs {
		if leaf.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	for _, n := range r.DNSNames {
		if leaf.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}
