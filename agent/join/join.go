// Package join gives a batchlet agent its own identity, as the kubelet's
// TLS bootstrap does: it finds the server's CA by the public-key hash it
// was given (kubeadm's --discovery-token-ca-cert-hash), asks for a client
// certificate (system:node:<name> in system:nodes) with a bootstrap
// token through a CertificateSigningRequest, keeps the key and
// certificate in its certificate directory for the next start, and asks
// for a serving certificate for its endpoints with that identity.
package join

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/batchlet/batchlet/pki"
)

// Files of the certificate directory.
const (
	CAFile          = "ca.crt"
	ClientCertFile  = "kubelet-client.crt"
	ClientKeyFile   = "kubelet-client.key"
	ServingCertFile = "kubelet.crt"
	ServingKeyFile  = "kubelet.key"
	KubeconfigFile  = "kubelet.conf"
)

// Who a node is, as the kubelet names itself.
const (
	NodeUserPrefix = "system:node:"
	GroupNodes     = "system:nodes"
)

// pollInterval is how often a pending CSR is read again.
const pollInterval = 100 * time.Millisecond

// Options say how to join.
type Options struct {
	// Server is the API's URL (https://host:port).
	Server string
	// Token is a bootstrap token (abcdef.0123456789abcdef).
	Token string
	// CACertHashes pin the server's CA ("sha256:<hex>"); one must match.
	CACertHashes []string
	NodeName     string
	// Dir keeps the CA, the keys, the certificates and the kubeconfig.
	Dir    string
	Logger *slog.Logger
}

// ClientConfig is the node's client configuration: the one kept in
// opts.Dir while its certificate is valid, or a new one made with the
// bootstrap token.
func ClientConfig(ctx context.Context, opts Options) (*rest.Config, error) {
	kubeconfig := filepath.Join(opts.Dir, KubeconfigFile)
	if cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig); err == nil && certValid(filepath.Join(opts.Dir, ClientCertFile)) {
		opts.Logger.Info("using the node's client certificate from an earlier join", "node", opts.NodeName, "dir", opts.Dir)
		return cfg, nil
	}
	if opts.Token == "" || len(opts.CACertHashes) == 0 {
		return nil, fmt.Errorf("no valid client certificate in %s: joining needs --token and --ca-cert-hash", opts.Dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create certificate dir: %w", err)
	}
	caPEM, err := DiscoverCA(ctx, opts.Server, opts.CACertHashes)
	if err != nil {
		return nil, err
	}
	bootstrap, err := kubernetes.NewForConfig(&rest.Config{Host: opts.Server, BearerToken: opts.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}})
	if err != nil {
		return nil, fmt.Errorf("bootstrap client: %w", err)
	}
	key, err := pki.LoadOrCreateKey(filepath.Join(opts.Dir, ClientKeyFile))
	if err != nil {
		return nil, err
	}
	subject := pkix.Name{CommonName: NodeUserPrefix + opts.NodeName, Organization: []string{GroupNodes}}
	certPEM, err := RequestCertificate(ctx, bootstrap, certificatesv1.KubeAPIServerClientKubeletSignerName, subject, nil, nil, key)
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(filepath.Join(opts.Dir, ClientCertFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(filepath.Join(opts.Dir, CAFile), caPEM, 0o644); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(kubeconfig, opts); err != nil {
		return nil, err
	}
	opts.Logger.Info("joined: client certificate issued", "node", opts.NodeName, "dir", opts.Dir)
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// DiscoverCA finds the CA in the server's TLS handshake whose public-key
// hash is one of hashes, and checks that it signed the server's
// certificate. Nothing is sent before: the token goes only to a server
// the pinned CA vouches for.
func DiscoverCA(ctx context.Context, server string, hashes []string) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want https://host:port", server)
	}
	dialer := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // verified below against the pinned CA
	conn, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", u.Host, err)
	}
	defer conn.Close()
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	for _, c := range chain {
		if !slices.Contains(hashes, pki.CertHash(c)) {
			continue
		}
		pool := x509.NewCertPool()
		pool.AddCert(c)
		if _, err := chain[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: u.Hostname()}); err != nil {
			return nil, fmt.Errorf("the server's certificate is not signed by the pinned CA for %s: %w", u.Hostname(), err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), nil
	}
	return nil, fmt.Errorf("no certificate of %s matches --ca-cert-hash %v", u.Host, hashes)
}

// RequestCertificate creates a CSR for key with signer, subject and
// names, waits until it is issued and returns the certificate (PEM).
func RequestCertificate(ctx context.Context, client kubernetes.Interface, signer string, subject pkix.Name, ips []net.IP, dnsNames []string, key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, IPAddresses: ips, DNSNames: dnsNames}, key)
	if err != nil {
		return nil, fmt.Errorf("create certificate request: %w", err)
	}
	usage := certificatesv1.UsageClientAuth
	if signer == certificatesv1.KubeletServingSignerName {
		usage = certificatesv1.UsageServerAuth
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, usage},
		},
	}
	created, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create certificate signing request: %w", err)
	}
	return waitIssued(ctx, client, created.Name)
}

// waitIssued polls the CSR until it carries a certificate or is denied
// or failed.
func waitIssued(ctx context.Context, client kubernetes.Interface, name string) ([]byte, error) {
	var cert []byte
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient: the next poll retries
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
				return false, fmt.Errorf("certificate signing request %s %s: %s: %s", name, c.Type, c.Reason, c.Message)
			}
		}
		cert = csr.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for certificate signing request %s: %w", name, err)
	}
	return cert, nil
}

// certValid reports whether the certificate at path parses and has not
// expired.
func certValid(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return false
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	return err == nil && time.Now().Before(c.NotAfter)
}

// writeKubeconfig writes the node's kubeconfig, naming the files in dir
// as the kubelet's kubelet.conf does.
func writeKubeconfig(path string, opts Options) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: opts.Server, CertificateAuthority: filepath.Join(opts.Dir, CAFile)}
	cfg.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(opts.Dir, ClientCertFile), ClientKey: filepath.Join(opts.Dir, ClientKeyFile)}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	cfg.CurrentContext = "default"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("render node kubeconfig: %w", err)
	}
	return pki.WriteFileAtomic(path, out, 0o600)
}
