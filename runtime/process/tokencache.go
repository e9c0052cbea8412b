package process

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/runtime"
)

// tokenKey is what the kubelet's token manager keys a pod's tokens by,
// beyond the pod and its service account, which are fixed per pod.
type tokenKey struct {
	audience string
	seconds  int64
}

type issuedToken struct {
	token  string
	issued time.Time
}

// maxTokenAge is the age past which the kubelet renews a token whatever
// its lifetime.
const maxTokenAge = 24 * time.Hour

// tokenCache is the kubelet token manager's cache for one pod's tokens: a
// token is reused until 80% of its lifetime (at most a day) has passed,
// so a retried set-up, or a second projection with the same audience and
// lifetime, asks for no new one. Tokens are bound to the pod, so the cache
// dies with it.
type tokenCache struct {
	runtime.Resolver
	issuer runtime.TokenIssuer
	clock  clock.PassiveClock

	mu     sync.Mutex
	tokens map[tokenKey]issuedToken
}

// newTokenCache wraps res, which issues tokens, with a cache.
func newTokenCache(res runtime.Resolver, issuer runtime.TokenIssuer, clk clock.PassiveClock) *tokenCache {
	return &tokenCache{Resolver: res, issuer: issuer, clock: clk, tokens: map[tokenKey]issuedToken{}}
}

// ServiceAccountToken implements runtime.TokenIssuer.
func (c *tokenCache) ServiceAccountToken(ctx context.Context, pod *corev1.Pod, audience string, seconds int64) (string, error) {
	key := tokenKey{audience: audience, seconds: seconds}
	now := c.clock.Now()
	c.mu.Lock()
	t, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && !tokenNeedsRefresh(t.issued, seconds, now) {
		return t.token, nil
	}
	tok, err := c.issuer.ServiceAccountToken(ctx, pod, audience, seconds)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.tokens[key] = issuedToken{token: tok, issued: now}
	c.mu.Unlock()
	return tok, nil
}

// tokenNeedsRefresh is the kubelet's rule: a token issued at issued for
// seconds is renewed once 80% of that, or a day, has passed.
func tokenNeedsRefresh(issued time.Time, seconds int64, now time.Time) bool {
	age := now.Sub(issued)
	return age >= time.Duration(seconds)*time.Second*8/10 || age >= maxTokenAge
}

// tokenResolver is the pod's resolver with its token cache, when the
// resolver issues tokens at all.
func (p *pod) tokenResolver() runtime.Resolver {
	issuer, ok := p.res.(runtime.TokenIssuer)
	if !ok {
		return p.res
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokens == nil {
		p.tokens = newTokenCache(p.res, issuer, p.rt.clock)
	}
	return p.tokens
}
