package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureCreatesThenReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir, []string{"10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{CAFile: 0o644, CAKeyFile: 0o600, CertFile: 0o644, KeyFile: 0o600, TokenFile: 0o600, SAKeyFile: 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s mode = %o, want %o", name, st.Mode().Perm(), mode)
		}
	}
	if len(first.Token) != 64 {
		t.Errorf("token %q is not 32 random bytes in hex", first.Token)
	}
	leaf, err := x509.ParseCertificate(first.ServerCert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "10.1.2.3"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate does not cover %s: %v", h, err)
		}
	}
	block, _ := pem.Decode(first.CAPEM)
	ca, _ := x509.ParseCertificate(block.Bytes)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Errorf("serving certificate is not signed by the CA: %v", err)
	}

	second, err := Ensure(dir, []string{"10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Token != first.Token || string(second.CAPEM) != string(first.CAPEM) ||
		string(second.ServerCert.Certificate[0]) != string(first.ServerCert.Certificate[0]) ||
		!second.ServiceAccountKey.Equal(first.ServiceAccountKey) {
		t.Error("a second Ensure on the same dir changed the credentials")
	}
}

func TestEnsureReissuesForANewHostWithTheSameCA(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Ensure(dir, []string{"192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	if string(second.CAPEM) != string(first.CAPEM) || second.Token != first.Token {
		t.Error("adding a host replaced the CA or the token")
	}
	leaf, _ := x509.ParseCertificate(second.ServerCert.Certificate[0])
	if err := leaf.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("re-issued certificate does not cover the new host: %v", err)
	}
}

func TestKubeconfigLoadsWithClientcmd(t *testing.T) {
	b, err := Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Kubeconfig("https://127.0.0.1:6443", b)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != b.Token || !strings.Contains(string(cfg.CAData), "BEGIN CERTIFICATE") {
		t.Errorf("kubeconfig = host %q token %q", cfg.Host, cfg.BearerToken)
	}
}
