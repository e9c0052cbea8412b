package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http/httptest"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// tokenFunc is a Token that knows one token.
type tokenFunc struct{ token, user string }

func (f tokenFunc) AuthenticateToken(_ context.Context, token string) (authenticationv1.UserInfo, bool) {
	return authenticationv1.UserInfo{Username: f.user}, token == f.token
}

func TestRequestTriesCertificateThenStaticThenTokens(t *testing.T) {
	a := Request{
		Static: endpoints.TokenMap{"admin-token": {Username: "admin"}},
		Tokens: []Token{tokenFunc{"t1", "first"}, tokenFunc{"t1", "second"}, tokenFunc{"t2", "third"}},
	}
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:w1"}}
	tests := map[string]struct {
		header string
		tls    *tls.ConnectionState
		want   string
		ok     bool
	}{
		"no credentials":               {},
		"not a bearer token":           {header: "Basic abc"},
		"static token":                 {header: "Bearer admin-token", want: "admin", ok: true},
		"lower-case scheme":            {header: "bearer admin-token", want: "admin", ok: true},
		"first token authenticator":    {header: "Bearer t1", want: "first", ok: true},
		"later token authenticator":    {header: "Bearer t2", want: "third", ok: true},
		"unknown token":                {header: "Bearer nope"},
		"certificate before the token": {header: "Bearer admin-token", tls: &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}, want: "system:node:w1", ok: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			r.TLS = tc.tls
			u, ok := a.Authenticate(r)
			if ok != tc.ok || u.Username != tc.want {
				t.Errorf("Authenticate = %q, %v; want %q, %v", u.Username, ok, tc.want, tc.ok)
			}
		})
	}
}
