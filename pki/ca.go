package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is the cluster CA with its key: it signs the certificates that
// CertificateSigningRequests ask for, as kube-controller-manager's
// --cluster-signing-cert-file and --cluster-signing-key-file do.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// PEM is Cert encoded.
	PEM []byte
}

// LoadCA reads the CA that Ensure created in dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load CA from %s: %w", dir, err)
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// Issue signs a certificate for the public key of csr with the subject and
// names of csr, for usages, valid from an hour before now for validity
// (capped at the CA's own expiry). It returns the certificate in PEM.
func (ca *CA) Issue(csr *x509.CertificateRequest, usages []x509.ExtKeyUsage, now time.Time, validity time.Duration) ([]byte, error) {
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      csr.Subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     csr.DNSNames,
		IPAddresses:  csr.IPAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", csr.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// issueKeyPair generates a key and a certificate for it signed by ca: the
// credentials the server makes for itself (its kubelet client certificate,
// the embedded agent's serving certificate).
func (ca *CA) issueKeyPair(subject pkix.Name, ips []net.IP, dnsNames []string, usages []x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	csr := &x509.CertificateRequest{Subject: subject, IPAddresses: ips, DNSNames: dnsNames, PublicKey: &key.PublicKey}
	// A request made here needs no signature of its own: Issue checks it,
	// so build a signed one.
	der, err := x509.CreateCertificateRequest(rand.Reader, csr, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate request: %w", err)
	}
	parsed, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate request: %w", err)
	}
	certPEM, err = ca.Issue(parsed, usages, time.Now(), validYears*365*24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodeKey(key)
	return certPEM, keyPEM, err
}

// EncodeKey is key in PEM ("EC PRIVATE KEY").
func EncodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// KubeletClientUser is the identity the API server presents to node agents
// (kubeadm's apiserver-kubelet-client certificate); agents serve it alone.
const (
	KubeletClientUser  = "kube-apiserver-kubelet-client"
	KubeletClientGroup = "kubeadm:cluster-admins"
	kubeletClientCert  = "apiserver-kubelet-client.crt"
	kubeletClientKey   = "apiserver-kubelet-client.key"
)

// ensureKubeletClientCert loads or issues the API server's client
// certificate towards node agents.
func ensureKubeletClientCert(dir string, ca *CA) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, kubeletClientCert), filepath.Join(dir, kubeletClientKey)
	if cert, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && stillValid(cert, ca) {
		return cert, nil
	}
	certPEM, keyPEM, err := ca.issueKeyPair(pkix.Name{CommonName: KubeletClientUser, Organization: []string{KubeletClientGroup}},
		nil, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet client certificate: %w", err)
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// stillValid reports whether cert is signed by ca and not expired.
func stillValid(cert tls.Certificate, ca *CA) bool {
	if len(cert.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return false
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil && time.Now().Before(leaf.NotAfter)
}

// CertHash is kubeadm's --discovery-token-ca-cert-hash of a certificate:
// "sha256:" and the hex SHA-256 of its SubjectPublicKeyInfo.
func CertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CAHash is CertHash of the first certificate in caPEM.
func CAHash(caPEM []byte) (string, error) {
	blk, _ := pem.Decode(caPEM)
	if blk == nil {
		return "", errors.New("CA bundle holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", fmt.Errorf("parse CA certificate: %w", err)
	}
	return CertHash(cert), nil
}
