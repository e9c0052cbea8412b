// Package satoken issues and verifies service-account tokens as
// kube-apiserver's TokenRequest API does: JWTs signed with the cluster's
// service-account key, carrying upstream's registered claims and its
// "kubernetes.io" private claim (namespace, service account, bound pod and
// node).
package satoken

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"
)

// DefaultIssuer is kube-apiserver's usual --service-account-issuer, which
// is also its default API audience.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// leeway is the clock skew tolerated on exp, nbf and iat, as upstream's
// validator allows.
const leeway = time.Minute

// Ref names one object a token is bound to or issued for.
type Ref struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// Private is the "kubernetes.io" claim.
type Private struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount *Ref   `json:"serviceaccount,omitempty"`
	Pod            *Ref   `json:"pod,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
}

// Request is what one token is issued for.
type Request struct {
	Namespace      string
	ServiceAccount Ref
	// Pod and Node, when set, bind the token: it stops authenticating once
	// the pod is gone.
	Pod, Node  *Ref
	Audiences  []string
	Expiration time.Duration
}

// Token is an issued token and what it says.
type Token struct {
	Raw        string
	ID         string
	Expiration time.Time
}

// Verified is what a valid token says.
type Verified struct {
	Private
	ID string
}

// Issuer signs and verifies tokens with one key.
type Issuer struct {
	key    *ecdsa.PrivateKey
	signer jose.Signer
	// header is the token's protected header, base64url-encoded, as
	// signer writes it: the same for every token of this key.
	header string
	iss    string
	clock  clock.PassiveClock
	cache  verifiedCache
}

// NewIssuer returns an Issuer for key naming itself iss (DefaultIssuer if
// empty).
func NewIssuer(key *ecdsa.PrivateKey, iss string, clk clock.PassiveClock) (*Issuer, error) {
	if iss == "" {
		iss = DefaultIssuer
	}
	kid, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		return nil, fmt.Errorf("service-account token signer: %w", err)
	}
	header, err := protectedHeader(signer)
	if err != nil {
		return nil, fmt.Errorf("service-account token signer: %w", err)
	}
	return &Issuer{key: key, signer: signer, header: header, iss: iss, clock: clk, cache: verifiedCache{entries: map[verifiedKey]verifiedEntry{}}}, nil
}

// Issuer is the iss claim, which is also the API's audience.
func (i *Issuer) Issuer() string { return i.iss }

// keyID is the key's "kid": the unpadded base64url SHA-256 of its DER
// public key, as kube-apiserver computes it.
func keyID(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("marshal service-account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Subject is the username of a service account:
// system:serviceaccount:<namespace>:<name>.
func Subject(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Issue signs a token for r.
func (i *Issuer) Issue(r Request) (Token, error) {
	now := i.clock.Now()
	exp := now.Add(r.Expiration)
	id := string(uuid.NewUUID())
	claims := jwt.Claims{
		Issuer: i.iss, Subject: Subject(r.Namespace, r.ServiceAccount.Name), Audience: jwt.Audience(r.Audiences),
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ID: id,
	}
	sa := r.ServiceAccount
	raw, err := i.sign(payload{Claims: claims, K: Private{Namespace: r.Namespace, ServiceAccount: &sa, Pod: r.Pod, Node: r.Node}})
	if err != nil {
		return Token{}, fmt.Errorf("sign service-account token: %w", err)
	}
	return Token{Raw: raw, ID: id, Expiration: time.Unix(exp.Unix(), 0)}, nil
}

// payload is a token's claims: the registered ones and "kubernetes.io".
type payload struct {
	jwt.Claims
	K Private `json:"kubernetes.io"`
}

// sign encodes p and signs it as go-jose's compact JWS with signer would
// (the same header, claims JSON and ES256 signature encoding), without its
// per-token work: the header encoded again, the claims through
// reflection, the signature and the parts copied between three
// serializations. A token per pod makes that CPU count (issue 16).
func (i *Issuer) sign(p payload) (string, error) {
	body := appendPayload(make([]byte, 0, 1024), &p) // a bound token's claims take 500-700 bytes
	enc := base64.RawURLEncoding
	buf := make([]byte, 0, len(i.header)+1+enc.EncodedLen(len(body))+1+enc.EncodedLen(2*es256KeyBytes))
	buf = append(buf, i.header...)
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, body)
	digest := sha256.Sum256(buf)
	r, s, err := ecdsa.Sign(rand.Reader, i.key, digest[:])
	if err != nil {
		return "", err
	}
	// JWS's ES256 signature is r and s, each 32 big-endian bytes (RFC 7518
	// section 3.4).
	var sig [2 * es256KeyBytes]byte
	r.FillBytes(sig[:es256KeyBytes])
	s.FillBytes(sig[es256KeyBytes:])
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig[:])
	return string(buf), nil
}

// es256KeyBytes is the size of a P-256 scalar.
const es256KeyBytes = 32

// protectedHeader is the first part of the compact JWS signer makes.
func protectedHeader(signer jose.Signer) (string, error) {
	obj, err := signer.Sign([]byte("{}"))
	if err != nil {
		return "", err
	}
	compact, err := obj.CompactSerialize()
	if err != nil {
		return "", err
	}
	header, _, ok := strings.Cut(compact, ".")
	if !ok {
		return "", errors.New("compact JWS without parts")
	}
	return header, nil
}

// appendPayload appends p as encoding/json encodes it: the registered
// claims in jwt.Claims' order, each omitted when empty, then
// "kubernetes.io".
func appendPayload(b []byte, p *payload) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) { b = appendKey(b, &first, name) }
	c := &p.Claims
	if c.Issuer != "" {
		field("iss")
		b = appendJSONString(b, c.Issuer)
	}
	if c.Subject != "" {
		field("sub")
		b = appendJSONString(b, c.Subject)
	}
	if len(c.Audience) > 0 {
		field("aud")
		b = appendAudience(b, c.Audience)
	}
	for _, d := range []struct {
		name string
		date *jwt.NumericDate
	}{{"exp", c.Expiry}, {"nbf", c.NotBefore}, {"iat", c.IssuedAt}} {
		if d.date != nil {
			field(d.name)
			b = strconv.AppendInt(b, int64(*d.date), 10)
		}
	}
	if c.ID != "" {
		field("jti")
		b = appendJSONString(b, c.ID)
	}
	field("kubernetes.io")
	b = appendPrivate(b, &p.K)
	return append(b, '}')
}

// appendKey appends an object's next key and its colon, after a comma
// unless it is the object's first (*first, then cleared).
func appendKey(b []byte, first *bool, name string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendAudience is jwt.Audience's MarshalJSON: one audience is a string.
func appendAudience(b []byte, aud jwt.Audience) []byte {
	if len(aud) == 1 {
		return appendJSONString(b, aud[0])
	}
	b = append(b, '[')
	for n, a := range aud {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, a)
	}
	return append(b, ']')
}

func appendPrivate(b []byte, k *Private) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) { b = appendKey(b, &first, name) }
	if k.Namespace != "" {
		field("namespace")
		b = appendJSONString(b, k.Namespace)
	}
	for _, r := range []struct {
		name string
		ref  *Ref
	}{{"serviceaccount", k.ServiceAccount}, {"pod", k.Pod}, {"node", k.Node}} {
		if r.ref != nil {
			field(r.name)
			b = append(b, `{"name":`...)
			b = appendJSONString(b, r.ref.Name)
			b = append(b, `,"uid":`...)
			b = appendJSONString(b, string(r.ref.UID))
			b = append(b, '}')
		}
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: as is
// when it has only printable ASCII that needs no escape (names, UIDs,
// URLs), else through encoding/json (escapes, HTML-safe forms, invalid
// UTF-8).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ErrNotServiceAccountToken says a token is not a JWT this issuer signed,
// so another authenticator may still know it.
var ErrNotServiceAccountToken = errors.New("not a service-account token of this issuer")

// LooksLikeJWT reports whether token has a JWT's three parts.
func LooksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// Verify checks token's signature, issuer, times and that one of its
// audiences is in audiences, and returns its claims. A success is
// remembered for VerifiedCacheTTL (never past the token's expiry), as
// kube-apiserver's token cache does for 10 s: a pod calling the API
// presents the same token on every request, and the ES256 check is the
// most expensive step of its authentication. Callers still check what
// can change meanwhile (the bound pod and service account).
func (i *Issuer) Verify(token string, audiences []string) (Verified, error) {
	now := i.clock.Now()
	key := newVerifiedKey(token, audiences)
	if v, ok := i.cache.get(key, now); ok {
		return v, nil
	}
	v, err := i.verifyClaims(token, audiences)
	if err != nil {
		return Verified{}, err
	}
	i.cache.put(key, verifiedEntry{v: v.Verified, until: earliest(now.Add(VerifiedCacheTTL), v.expiry.Add(leeway))}, now)
	return v.Verified, nil
}

// verifiedClaims is a verification's result and the token's expiry.
type verifiedClaims struct {
	Verified
	expiry time.Time
}

func (i *Issuer) verifyClaims(token string, audiences []string) (verifiedClaims, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return verifiedClaims{}, ErrNotServiceAccountToken
	}
	var public jwt.Claims
	var private struct {
		K *Private `json:"kubernetes.io"`
	}
	if err := tok.Claims(&i.key.PublicKey, &public, &private); err != nil {
		return verifiedClaims{}, ErrNotServiceAccountToken
	}
	if public.Issuer != i.iss {
		return verifiedClaims{}, ErrNotServiceAccountToken
	}
	if err := public.ValidateWithLeeway(jwt.Expected{Time: i.clock.Now()}, leeway); err != nil {
		return verifiedClaims{}, fmt.Errorf("service-account token is not valid: %w", err)
	}
	if !anyAudience(public.Audience, audiences) {
		return verifiedClaims{}, errors.New("token audiences is invalid")
	}
	p := private.K
	if p == nil || p.ServiceAccount == nil || public.Subject != Subject(p.Namespace, p.ServiceAccount.Name) {
		return verifiedClaims{}, errors.New("service-account token has no or an inconsistent kubernetes.io claim")
	}
	return verifiedClaims{Verified: Verified{Private: *p, ID: public.ID}, expiry: public.Expiry.Time()}, nil
}

func anyAudience(have jwt.Audience, want []string) bool {
	for _, a := range want {
		if have.Contains(a) {
			return true
		}
	}
	return false
}
