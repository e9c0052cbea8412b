package process

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestTokenCache: the kubelet token manager's rules, per pod — one token
// per audience and lifetime, reused until 80% of the lifetime (or a day)
// has passed.
func TestTokenCache(t *testing.T) {
	type ask struct {
		after    time.Duration // clock step before the request
		audience string
		seconds  int64
		want     string // the token: team/builder/<audience>/<seconds>/<n-th request>
	}
	for _, tc := range []struct {
		name string
		asks []ask
	}{
		{"same key reused", []ask{{0, "", 3607, "team/builder//3607/1"}, {0, "", 3607, "team/builder//3607/1"}}},
		{"other audience", []ask{{0, "", 3607, "team/builder//3607/1"}, {0, "vault", 3607, "team/builder/vault/3607/2"}}},
		{"other lifetime", []ask{{0, "", 3607, "team/builder//3607/1"}, {0, "", 600, "team/builder//600/2"}}},
		{"just before 80%", []ask{{0, "", 1000, "team/builder//1000/1"}, {799 * time.Second, "", 1000, "team/builder//1000/1"}}},
		{"at 80%", []ask{{0, "", 1000, "team/builder//1000/1"}, {800 * time.Second, "", 1000, "team/builder//1000/2"}}},
		{"renewed, then reused", []ask{{0, "", 1000, "team/builder//1000/1"}, {900 * time.Second, "", 1000, "team/builder//1000/2"},
			{700 * time.Second, "", 1000, "team/builder//1000/2"}}},
		{"a day at most", []ask{{0, "", 7 * 86400, "team/builder//604800/1"}, {24 * time.Hour, "", 7 * 86400, "team/builder//604800/2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			res := &tokenResolver{}
			c := newTokenCache(res, res, clk)
			for i, a := range tc.asks {
				clk.Step(a.after)
				got, err := c.ServiceAccountToken(context.Background(), tokenPod(), a.audience, a.seconds)
				if err != nil || got != a.want {
					t.Errorf("request %d: %q (%v), want %q", i, got, err, a.want)
				}
			}
		})
	}
}

// A pod whose resolver issues no tokens keeps it: writeToken's error
// stays the same.
func TestTokenResolverWithoutIssuer(t *testing.T) {
	p := &pod{rt: &Runtime{clock: clocktesting.NewFakeClock(time.Unix(0, 0))}, res: fakeResolver{}}
	if got, ok := p.tokenResolver().(fakeResolver); !ok {
		t.Errorf("tokenResolver = %T, want the pod's own fakeResolver", got)
	}
}
