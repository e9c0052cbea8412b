// Package pki creates and loads the credentials of a batchlet control plane:
// a self-signed CA, a serving certificate signed by it, the server's client
// certificate towards node agents and the admin bearer token, all kept in
// the data directory; and the CA operations node joining needs (signing
// certificate requests, kubeadm's CA public-key hash).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside the data directory.
const (
	CAFile    = "ca.crt"
	CAKeyFile = "ca.key"
	CertFile  = "server.crt"
	KeyFile   = "server.key"
	TokenFile = "token"
	// SAKeyFile signs service-account tokens (kube-apiserver's
	// --service-account-signing-key-file).
	SAKeyFile  = "sa.key"
	validYears = 10
)

// Bundle is the loaded credential set.
type Bundle struct {
	CAPEM      []byte
	ServerCert tls.Certificate
	Token      string
	// ServiceAccountKey signs and verifies service-account tokens; it is
	// kept across restarts so tokens issued before one stay valid.
	ServiceAccountKey *ecdsa.PrivateKey
	// CA signs node certificates (CertificateSigningRequests) and verifies
	// client certificates.
	CA *CA
	// KubeletClientCert is the server's client certificate towards node
	// agents (kubeadm's apiserver-kubelet-client).
	KubeletClientCert tls.Certificate
}

// Ensure loads the credentials in dir, creating whatever is missing. hosts
// are the IPs and DNS names the serving certificate must cover (localhost
// and 127.0.0.1 are always included). A certificate that does not cover
// every host is re-issued from the existing CA.
func Ensure(dir string, hosts []string) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	caCert, caKey, caPEM, err := ensureCA(dir)
	if err != nil {
		return nil, err
	}
	hosts = append([]string{"localhost", "127.0.0.1"}, hosts...)
	serverCert, err := ensureServerCert(dir, caCert, caKey, hosts)
	if err != nil {
		return nil, err
	}
	token, err := ensureToken(dir)
	if err != nil {
		return nil, err
	}
	saKey, err := ensureSAKey(dir)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: caCert, Key: caKey, PEM: caPEM}
	kubeletClient, err := ensureKubeletClientCert(dir, ca)
	if err != nil {
		return nil, err
	}
	// The serving chain carries the CA too, so a joining agent can find the
	// CA its --ca-cert-hash pins in the handshake (kubeadm reads it from the
	// cluster-info ConfigMap instead).
	serverCert.Certificate = append(serverCert.Certificate, caCert.Raw)
	return &Bundle{CAPEM: caPEM, ServerCert: serverCert, Token: token, ServiceAccountKey: saKey, CA: ca, KubeletClientCert: kubeletClient}, nil
}

// ensureSAKey loads the service-account signing key, generating it on the
// first start.
func ensureSAKey(dir string) (*ecdsa.PrivateKey, error) {
	return LoadOrCreateKey(filepath.Join(dir, SAKeyFile))
}

// LoadOrCreateKey reads the P-256 key at path, or makes one and keeps it
// there (0600, written atomically), so whoever asks again — a restarted
// server, a join interrupted after its request — gets the same key.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	if b, err := os.ReadFile(path); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("load %s: malformed PEM", path)
		}
		key, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		return key, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key %s: %w", path, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return key, writeFileAtomic(path, keyPEM, 0o600)
}

func ensureCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	certPEM, errCert := os.ReadFile(certPath)
	keyPEM, errKey := os.ReadFile(keyPath)
	if errCert == nil && errKey == nil {
		cert, key, err := parsePair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("load CA from %s: %w", dir, err)
		}
		return cert, key, certPEM, nil
	}
	if !errors.Is(errCert, fs.ErrNotExist) && errCert != nil {
		return nil, nil, nil, fmt.Errorf("read CA: %w", errCert)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "batchlet-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(validYears, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sign CA: %w", err)
	}
	cert, _ := x509.ParseCertificate(der)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writePair(certPath, keyPath, certPEM, key); err != nil {
		return nil, nil, nil, err
	}
	return cert, key, certPEM, nil
}

func ensureServerCert(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	if certPEM, err := os.ReadFile(certPath); err == nil {
		if keyPEM, err := os.ReadFile(keyPath); err == nil {
			if cert, _, err := parsePair(certPEM, keyPEM); err == nil && covers(cert, hosts) && time.Now().Before(cert.NotAfter) {
				return tls.X509KeyPair(certPEM, keyPEM)
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generate serving key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "batchlet-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(validYears, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range dedupe(hosts) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sign serving certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writePair(certPath, keyPath, certPEM, key); err != nil {
		return tls.Certificate{}, err
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

func ensureToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	token := hex.EncodeToString(buf)
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", err
	}
	return token, nil
}

// covers reports whether cert is valid for every host.
func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("malformed PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse key: %w", err)
	}
	return cert, key, nil
}

func writePair(certPath, keyPath string, certPEM []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, certPEM, 0o644)
}

// writeFileAtomic writes via a temporary file and rename so a crash never
// leaves a half-written credential.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

// WriteFileAtomic is writeFileAtomic for other packages (kubeconfig).
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	return writeFileAtomic(path, data, mode)
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
