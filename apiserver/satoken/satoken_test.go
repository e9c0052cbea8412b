package satoken

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestIssuer(t *testing.T, clk *clocktesting.FakeClock) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	i, err := NewIssuer(key, "", clk)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestIssueCarriesUpstreamClaims(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	i := newTestIssuer(t, clk)
	tok, err := i.Issue(Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"},
		Pod: &Ref{Name: "p", UID: "pod-uid"}, Audiences: []string{DefaultIssuer}, Expiration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok.Raw, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"iss": DefaultIssuer, "sub": "system:serviceaccount:ns:default", "aud": DefaultIssuer,
		"iat": 1_700_000_000.0, "nbf": 1_700_000_000.0, "exp": 1_700_003_600.0, "jti": tok.ID,
		"kubernetes.io": map[string]any{"namespace": "ns",
			"serviceaccount": map[string]any{"name": "default", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "p", "uid": "pod-uid"}},
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("claims\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if !tok.Expiration.Equal(time.Unix(1_700_003_600, 0)) {
		t.Errorf("expiration = %v", tok.Expiration)
	}
}

func TestVerify(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clocktesting.NewFakeClock(start)
	i := newTestIssuer(t, clk)
	other := newTestIssuer(t, clk)
	issue := func(iss *Issuer, aud string) string {
		tok, err := iss.Issue(Request{Namespace: "ns", ServiceAccount: Ref{Name: "sa", UID: "u"}, Audiences: []string{aud}, Expiration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Raw
	}
	cases := []struct {
		name    string
		token   string
		at      time.Time
		wantErr string
	}{
		{"valid", issue(i, DefaultIssuer), start.Add(time.Minute), ""},
		{"within leeway after expiry", issue(i, DefaultIssuer), start.Add(time.Hour + 30*time.Second), ""},
		{"expired", issue(i, DefaultIssuer), start.Add(2 * time.Hour), "token is expired"},
		{"wrong audience", issue(i, "vault"), start, "token audiences is invalid"},
		{"other key", issue(other, DefaultIssuer), start, ErrNotServiceAccountToken.Error()},
		{"not a JWT", "abc", start, ErrNotServiceAccountToken.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk.SetTime(tc.at)
			v, err := i.Verify(tc.token, []string{DefaultIssuer})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if v.Namespace != "ns" || v.ServiceAccount.Name != "sa" || v.ServiceAccount.UID != "u" || v.ID == "" {
					t.Errorf("claims = %+v", v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// go test ./apiserver/satoken -run XXX -bench .
func BenchmarkIssue(b *testing.B) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	i, err := NewIssuer(key, "", clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
	if err != nil {
		b.Fatal(err)
	}
	r := Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"},
		Pod: &Ref{Name: "p", UID: "pod-uid"}, Node: &Ref{Name: "n", UID: "node-uid"}, Audiences: []string{DefaultIssuer}, Expiration: time.Hour}
	b.Run("one-encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := i.Issue(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The claims encoded by encoding/json and signed by go-jose, as Issue
	// did before its own encoder and signing.
	b.Run("go-jose-sign", func(b *testing.B) {
		b.ReportAllocs()
		sa := r.ServiceAccount
		for b.Loop() {
			now := i.clock.Now()
			claims := jwt.Claims{Issuer: i.iss, Subject: Subject(r.Namespace, sa.Name), Audience: jwt.Audience(r.Audiences),
				Expiry: jwt.NewNumericDate(now.Add(r.Expiration)), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ID: "id"}
			body, err := json.Marshal(payload{Claims: claims, K: Private{Namespace: r.Namespace, ServiceAccount: &sa, Pod: r.Pod, Node: r.Node}})
			if err != nil {
				b.Fatal(err)
			}
			sig, err := i.signer.Sign(body)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sig.CompactSerialize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// go-jose's claims builder, which Issue used before: the same claims.
	claims := jwt.Claims{Issuer: i.iss, Subject: Subject(r.Namespace, r.ServiceAccount.Name), Audience: jwt.Audience(r.Audiences),
		Expiry: jwt.NewNumericDate(time.Unix(1_700_003_600, 0)), IssuedAt: jwt.NewNumericDate(time.Unix(1_700_000_000, 0)),
		NotBefore: jwt.NewNumericDate(time.Unix(1_700_000_000, 0)), ID: "id"}
	private := struct {
		K Private `json:"kubernetes.io"`
	}{Private{Namespace: r.Namespace, ServiceAccount: &r.ServiceAccount, Pod: r.Pod, Node: r.Node}}
	b.Run("claims-builder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jwt.Signed(i.signer).Claims(claims).Claims(private).Serialize(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	i, err := NewIssuer(key, "", clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
	if err != nil {
		b.Fatal(err)
	}
	tok, err := i.Issue(Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"},
		Pod: &Ref{Name: "p", UID: "pod-uid"}, Audiences: []string{DefaultIssuer}, Expiration: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("signature", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := i.verifyClaims(tok.Raw, []string{DefaultIssuer}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := i.Verify(tok.Raw, []string{DefaultIssuer}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPayloadEncodesAsEncodingJSON checks the hand-written claims encoder
// against encoding/json, which produced the tokens before, byte for byte.
func TestPayloadEncodesAsEncodingJSON(t *testing.T) {
	at := func(sec int64) *jwt.NumericDate { d := jwt.NumericDate(sec); return &d }
	full := jwt.Claims{Issuer: DefaultIssuer, Subject: Subject("ns", "default"), Audience: jwt.Audience{DefaultIssuer},
		Expiry: at(1_700_003_600), NotBefore: at(1_700_000_000), IssuedAt: at(1_700_000_000), ID: "8c1f-id"}
	cases := map[string]payload{
		"bound to pod and node": {Claims: full, K: Private{Namespace: "ns", ServiceAccount: &Ref{Name: "default", UID: "sa"},
			Pod: &Ref{Name: "p", UID: "pod-uid"}, Node: &Ref{Name: "n", UID: "node-uid"}}},
		"unbound": {Claims: full, K: Private{Namespace: "ns", ServiceAccount: &Ref{Name: "default"}}},
		"audiences": {Claims: jwt.Claims{Issuer: "iss", Audience: jwt.Audience{"a", "b", "c"}, ID: "x"},
			K: Private{ServiceAccount: &Ref{Name: "sa"}}},
		"empty":       {},
		"no audience": {Claims: jwt.Claims{Audience: jwt.Audience{}, Expiry: at(-5)}},
		"escapes": {Claims: jwt.Claims{Issuer: "https://h/<x>&y", Subject: "quote\" back\\ tab\t nl\n ctl\x01",
			Audience: jwt.Audience{"é", "\u2028", "bad\xffutf8", "~\x7f"}, ID: "id"},
			K: Private{Namespace: "ns<", Pod: &Ref{Name: "p&", UID: "\"u\""}}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendPayload(nil, &p); string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestIssueSignsAsGoJose checks that a token has go-jose's header and a
// signature go-jose accepts with the issuer's key.
func TestIssueSignsAsGoJose(t *testing.T) {
	i := newTestIssuer(t, clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
	tok, err := i.Issue(Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"},
		Audiences: []string{DefaultIssuer}, Expiration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := i.signer.Sign([]byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	refCompact, err := ref.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(tok.Raw, ".")[0], strings.Split(refCompact, ".")[0]; got != want {
		t.Errorf("header %s, go-jose's %s", got, want)
	}
	parsed, err := jose.ParseSigned(tok.Raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parsed.Verify(&i.key.PublicKey); err != nil {
		t.Fatalf("go-jose rejects the signature: %v", err)
	}
	other := newTestIssuer(t, clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
	if _, err := parsed.Verify(&other.key.PublicKey); err == nil {
		t.Error("another key verifies the signature")
	}
}
