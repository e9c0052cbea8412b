package authn

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBootstrapTokenUser(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	secret := func(edit func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system"},
			Type:       "bootstrap.kubernetes.io/token",
			Data: map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"),
				"usage-bootstrap-authentication": []byte("true"), "expiration": []byte("2026-05-02T00:00:00Z"),
				"auth-extra-groups": []byte("system:bootstrappers:kubeadm:default-node-token")},
		}
		if edit != nil {
			edit(s)
		}
		return s
	}
	const token = "abcdef.0123456789abcdef"
	tests := []struct {
		name   string
		secret *corev1.Secret
		token  string
		ok     bool
	}{
		{"valid", secret(nil), token, true},
		{"wrong secret", secret(nil), "abcdef.0123456789abcdeX", false},
		{"expired", secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte("2026-05-01T11:59:59Z") }), token, false},
		{"not for authentication", secret(func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") }), token, false},
		{"wrong type", secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), token, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := BootstrapTokenUser(tc.secret, tc.token, now)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			want := []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", endpoints.GroupAuthenticated}
			if u.Username != "system:bootstrap:abcdef" || !slices.Equal(u.Groups, want) {
				t.Errorf("user = %s %v, want system:bootstrap:abcdef %v", u.Username, u.Groups, want)
			}
		})
	}
}

func TestX509User(t *testing.T) {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:w1", Organization: []string{"system:nodes"}}}
	if _, ok := X509User(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); ok {
		t.Error("an unverified certificate authenticated")
	}
	u, ok := X509User(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}})
	if !ok || u.Username != "system:node:w1" || !slices.Equal(u.Groups, []string{"system:nodes", endpoints.GroupAuthenticated}) {
		t.Errorf("user = %v %v, want system:node:w1 in system:nodes", u, ok)
	}
}
