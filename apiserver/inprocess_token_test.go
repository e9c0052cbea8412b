package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"reflect"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/satoken"
	"github.com/batchlet/batchlet/storage/memory"
)

// newTokenEquivEnv is newEquivEnv with a service-account issuer.
func newTokenEquivEnv(t *testing.T, inProc bool, key *ecdsa.PrivateKey) *equivEnv {
	t.Helper()
	clk := equivClock()
	issuer, err := satoken.NewIssuer(key, "", clk)
	if err != nil {
		t.Fatal(err)
	}
	return newEquivEnvWith(t, inProc, Config{Storage: memory.New(1000), Clock: clk, ServiceAccountIssuer: issuer})
}

// The in-process TokenRequest answers as the HTTP one does (the tokens'
// signatures differ, so they are compared by what they authenticate as),
// and counts the same request.
func TestInProcessTokenRequestMatchesHTTP(t *testing.T) {
	ctx := context.Background()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	viaHTTP, inProc := newTokenEquivEnv(t, false, key), newTokenEquivEnv(t, true, key)
	for _, e := range []*equivEnv{viaHTTP, inProc} {
		if _, err := e.http.CoreV1().Pods("default").Create(ctx, equivPod("p1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	short := int64(60)
	cases := []struct {
		name string
		sa   string
		spec authenticationv1.TokenRequestSpec
		ok   bool // a token is issued
	}{
		{"bound to a pod", "default", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"},
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1"}}, true},
		{"default audience and lifetime", "default", authenticationv1.TokenRequestSpec{}, true},
		{"too short", "default", authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}, false},
		{"unknown service account", "nobody", authenticationv1.TokenRequestSpec{}, false},
		{"unknown pod", "default", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p9"}}, false},
	}
	for _, tc := range cases {
		run := func(e *equivEnv) (*authenticationv1.TokenRequest, error) {
			return e.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, tc.sa, &authenticationv1.TokenRequest{Spec: *tc.spec.DeepCopy()}, metav1.CreateOptions{})
		}
		want, wantErr := run(viaHTTP)
		before := inProc.fallbacks.Load()
		got, gotErr := run(inProc)
		if inProc.fallbacks.Load() != before {
			t.Errorf("%s: sent over HTTP", tc.name)
		}
		if issued := gotErr == nil && got.Status.Token != ""; issued != tc.ok {
			t.Errorf("%s: token issued %v, want %v (err %v)", tc.name, issued, tc.ok, gotErr)
		}
		compareEquiv(t, tc.name+": error", viaHTTP, inProc, errObj(wantErr), errObj(gotErr))
		if wantErr != nil && reflect.TypeOf(wantErr) != reflect.TypeOf(gotErr) {
			t.Errorf("%s: error type %T, want %T", tc.name, gotErr, wantErr)
		}
		wantUser, gotUser := tokenUser(ctx, t, viaHTTP, want), tokenUser(ctx, t, inProc, got)
		if want.Spec.BoundObjectRef != nil {
			want.Spec.BoundObjectRef.UID, got.Spec.BoundObjectRef.UID = "UID", "UID"
		}
		want.Status.Token, got.Status.Token = "TOKEN", "TOKEN"
		compareEquiv(t, tc.name+": answer", viaHTTP, inProc, want, got)
		compareEquiv(t, tc.name+": token's user", viaHTTP, inProc, wantUser, gotUser)
	}
	if want, got := requestCounts(t, viaHTTP.srv), requestCounts(t, inProc.srv); !reflect.DeepEqual(want, got) {
		t.Errorf("apiserver_request_total differs:\nhttp:       %v\nin-process: %v", want, got)
	}
}

// tokenUser is the user tr's token authenticates as on e's server (with
// UIDs and the credential id masked), or nil when tr has no token.
func tokenUser(ctx context.Context, t *testing.T, e *equivEnv, tr *authenticationv1.TokenRequest) any {
	t.Helper()
	if tr == nil || tr.Status.Token == "" {
		return nil
	}
	sa := authn.ServiceAccountTokens{Issuer: e.srv.cfg.ServiceAccountIssuer, Objects: storeReader{e.srv}, Clock: e.srv.clock, Log: e.srv.log}
	u, ok := sa.AuthenticateToken(ctx, tr.Status.Token)
	if !ok {
		return "token not accepted"
	}
	delete(u.Extra, "authentication.kubernetes.io/credential-id")
	for k, v := range u.Extra {
		if k == "authentication.kubernetes.io/pod-uid" && len(v) == 1 {
			u.Extra[k] = authenticationv1.ExtraValue{"UID"}
		}
	}
	u.UID = "UID"
	return u
}
