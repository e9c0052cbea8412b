package satoken

import (
	"crypto/sha256"
	"strings"
	"sync"
	"time"
)

// VerifiedCacheTTL is how long a verified token is trusted without
// checking its signature again: kube-apiserver's token success cache
// (TokenSuccessCacheTTL) defaults to 10 s.
const VerifiedCacheTTL = 10 * time.Second

// maxVerified bounds the cache: past it, expired entries go, and if none
// had expired, all of them (a burst of distinct tokens only costs their
// signature checks again).
const maxVerified = 4096

// verifiedKey is a token's SHA-256 with the audiences it was checked
// against; the token itself is not kept.
type verifiedKey struct {
	token     [sha256.Size]byte
	audiences string
}

func newVerifiedKey(token string, audiences []string) verifiedKey {
	return verifiedKey{token: sha256.Sum256([]byte(token)), audiences: strings.Join(audiences, "\x00")}
}

type verifiedEntry struct {
	v     Verified
	until time.Time
}

// verifiedCache remembers successful verifications until their entry's
// time.
type verifiedCache struct {
	mu      sync.Mutex
	entries map[verifiedKey]verifiedEntry
}

func (c *verifiedCache) get(k verifiedKey, now time.Time) (Verified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.until) {
		return Verified{}, false
	}
	return e.v, true
}

func (c *verifiedCache) put(k verifiedKey, e verifiedEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxVerified {
		for key, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, key)
			}
		}
		if len(c.entries) >= maxVerified {
			clear(c.entries)
		}
	}
	c.entries[k] = e
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
