package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/pki"
)

func request(t *testing.T, cn string, orgs []string, ips []net.IP) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs}, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestDecide(t *testing.T) {
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	server := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodes := []string{groupNodes}
	ip := []net.IP{net.ParseIP("10.0.0.2")}
	approved := []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	tests := []struct {
		name       string
		signer     string
		cn         string
		orgs       []string
		ips        []net.IP
		usages     []certificatesv1.KeyUsage
		user       string
		groups     []string
		conditions []certificatesv1.CertificateSigningRequestCondition
		cert       []byte
		want       action
	}{
		{"bootstrap token asks for a node client cert", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", nodes, nil, client,
			"system:bootstrap:abcdef", []string{groupBootstrap}, nil, nil, actionApprove},
		{"node renews its own client cert", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", nodes, nil, client,
			"system:node:w1", nodes, nil, nil, actionApprove},
		{"node asks for another node's client cert", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w2", nodes, nil, client,
			"system:node:w1", nodes, nil, nil, actionNone},
		{"bootstrap token asks for a serving cert", certificatesv1.KubeletServingSignerName, "system:node:w1", nodes, ip, server,
			"system:bootstrap:abcdef", []string{groupBootstrap}, nil, nil, actionNone},
		{"node asks for its serving cert", certificatesv1.KubeletServingSignerName, "system:node:w1", nodes, ip, server,
			"system:node:w1", nodes, nil, nil, actionApprove},
		{"admin asks for a serving cert", certificatesv1.KubeletServingSignerName, "system:node:w1", nodes, ip, server,
			"kubernetes-admin", []string{groupMasters}, nil, nil, actionApprove},
		{"client cert with an IP is not approved", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", nodes, ip, client,
			"system:bootstrap:abcdef", []string{groupBootstrap}, nil, nil, actionNone},
		{"client cert claiming system:masters is not approved", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", []string{groupMasters}, nil, client,
			"system:bootstrap:abcdef", []string{groupBootstrap}, nil, nil, actionNone},
		{"other signers are not ours", "example.com/signer", "system:node:w1", nodes, nil, client,
			"system:node:w1", nodes, nil, nil, actionNone},
		{"approved is signed", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", nodes, nil, client,
			"system:bootstrap:abcdef", []string{groupBootstrap}, approved, nil, actionSign},
		{"approved but invalid fails", certificatesv1.KubeAPIServerClientKubeletSignerName, "someone", nil, nil, client,
			"kubernetes-admin", []string{groupMasters}, approved, nil, actionFail},
		{"issued is done", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:w1", nodes, nil, client,
			"system:node:w1", nodes, approved, []byte("cert"), actionNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				Spec: certificatesv1.CertificateSigningRequestSpec{Request: request(t, tc.cn, tc.orgs, tc.ips), SignerName: tc.signer,
					Usages: tc.usages, Username: tc.user, Groups: tc.groups},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: tc.conditions, Certificate: tc.cert},
			}
			if got := decide(csr).action; got != tc.want {
				t.Errorf("decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSignIssuesAClientCertificateOfTheCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.Ensure(dir, nil); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := ca.Cert.NotBefore.Add(48 * time.Hour).UTC().Truncate(time.Second) // within the CA's validity
	seconds := int32(3600)
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: request(t, "system:node:w1", []string{groupNodes}, nil), SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ExpirationSeconds: &seconds}}
	c := &Controller{ca: ca}
	certPEM, err := c.sign(csr, now)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:w1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != groupNodes {
		t.Errorf("subject = %v, want system:node:w1 in system:nodes", cert.Subject)
	}
	if !cert.NotAfter.Equal(now.Add(time.Hour)) {
		t.Errorf("notAfter = %v, want %v (expirationSeconds)", cert.NotAfter, now.Add(time.Hour))
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("certificate does not verify as a client certificate of the CA: %v", err)
	}
}
