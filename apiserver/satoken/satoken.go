// Package satoken issues and verifies service-account tokens as
// kube-apiserver's TokenRequest API does: JWTs signed with the cluster's
// service-account key, carrying upstream's registered claims and its
// "kubernetes.io" private claim (namespace, service account, bound pod and
// node).
package satoken

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
	return &Issuer{key: key, signer: signer, iss: iss, clock: clk, cache: verifiedCache{entries: map[verifiedKey]verifiedEntry{}}}, nil
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

// sign encodes p once and signs it. go-jose's claims builder produces the
// same JSON but encodes each claim set, decodes it into a map, merges and
// encodes again: as much CPU as the ES256 signature itself, once per pod.
func (i *Issuer) sign(p payload) (string, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	sig, err := i.signer.Sign(body)
	if err != nil {
		return "", err
	}
	return sig.CompactSerialize()
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
