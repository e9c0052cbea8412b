package satoken

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// A verified token is trusted from the cache for VerifiedCacheTTL, never
// past its own expiry (with leeway), and only for the audiences it was
// checked against.
func TestVerifyCache(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	sa := Ref{Name: "sa", UID: "u"}
	tests := []struct {
		name       string
		expiration time.Duration
		audiences  []string // of the second Verify
		after      time.Duration
		wantErr    string
		wantUntil  time.Duration // the cache entry's time after the second Verify, from start
	}{
		{name: "within the TTL", expiration: time.Hour, after: 9 * time.Second, wantUntil: VerifiedCacheTTL},
		{name: "past the TTL: verified again", expiration: time.Hour, after: 11 * time.Second, wantUntil: 11*time.Second + VerifiedCacheTTL},
		{name: "cache entry ends with the token", expiration: -55 * time.Second, after: 7 * time.Second, wantErr: "token is expired", wantUntil: 5 * time.Second},
		{name: "other audiences are checked", expiration: time.Hour, audiences: []string{"vault"}, after: time.Second, wantErr: "token audiences is invalid", wantUntil: VerifiedCacheTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			i := newTestIssuer(t, clk)
			tok, err := i.Issue(Request{Namespace: "ns", ServiceAccount: sa, Audiences: []string{DefaultIssuer}, Expiration: tt.expiration})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := i.Verify(tok.Raw, []string{DefaultIssuer}); err != nil {
				t.Fatalf("first Verify: %v", err)
			}
			clk.SetTime(start.Add(tt.after))
			audiences := tt.audiences
			if audiences == nil {
				audiences = []string{DefaultIssuer}
			}
			v, err := i.Verify(tok.Raw, audiences)
			if tt.wantErr == "" && (err != nil || v.ServiceAccount.Name != "sa" || v.ID != tok.ID) {
				t.Fatalf("second Verify = %+v, %v", v, err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("second Verify err = %v, want %q", err, tt.wantErr)
			}
			e, ok := i.cache.entries[newVerifiedKey(tok.Raw, []string{DefaultIssuer})]
			if !ok || !e.until.Equal(start.Add(tt.wantUntil)) {
				t.Errorf("cache entry until %v (present %v), want %v", e.until, ok, start.Add(tt.wantUntil))
			}
			if len(i.cache.entries) != 1 {
				t.Errorf("%d cache entries, want 1 (failures are not cached)", len(i.cache.entries))
			}
		})
	}
}

// The cache stays bounded: past maxVerified it drops expired entries, and
// all of them when none had expired.
func TestVerifyCacheBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := verifiedCache{entries: map[verifiedKey]verifiedEntry{}}
	for n := range maxVerified {
		until := now.Add(time.Second)
		if n%2 == 0 {
			until = now // expired at now
		}
		c.put(newVerifiedKey(fmt.Sprint(n), nil), verifiedEntry{until: until}, now.Add(-time.Minute))
	}
	c.put(newVerifiedKey("one more", nil), verifiedEntry{until: now.Add(time.Second)}, now)
	if got := len(c.entries); got != maxVerified/2+1 {
		t.Errorf("%d entries after expired ones went, want %d", got, maxVerified/2+1)
	}
	for n := len(c.entries); n < maxVerified; n++ {
		c.put(newVerifiedKey(fmt.Sprint("live", n), nil), verifiedEntry{until: now.Add(time.Second)}, now)
	}
	c.put(newVerifiedKey("last", nil), verifiedEntry{until: now.Add(time.Second)}, now)
	if got := len(c.entries); got != 1 {
		t.Errorf("%d entries when none had expired, want only the new one", got)
	}
}
