package results

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Expiry, fed one result at a time, selects what Expired selects from all
// of them; with an undercount it selects a part of that.
func TestExpiryMatchesExpired(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	var items []Stored
	for i := range 500 {
		// Minutes apart with ties, in no particular order.
		items = append(items, Stored{Namespace: fmt.Sprintf("ns%d", i%3), Name: fmt.Sprintf("r%d", i),
			FinishedAt: now.Add(-time.Duration(rng.IntN(300)) * time.Minute)})
	}
	cases := []Retention{
		{MaxAge: time.Hour},
		{MaxCount: 100},
		{MaxAge: 2 * time.Hour, MaxCount: 50},
		{MaxAge: 10 * time.Hour, MaxCount: 50},
		{MaxCount: 1000},
		{},
	}
	for _, r := range cases {
		for _, total := range []int{len(items), -1, len(items) - 100} {
			t.Run(fmt.Sprintf("age %v count %d total %d", r.MaxAge, r.MaxCount, total), func(t *testing.T) {
				e := r.NewExpiry(now, total)
				for _, s := range items {
					e.Add(s)
				}
				got, want := e.Expired(), r.Expired(items, now)
				if e.Seen() != len(items) {
					t.Errorf("Seen() = %d, want %d", e.Seen(), len(items))
				}
				if total >= len(items) || total < 0 {
					if !slices.Equal(got, want) {
						t.Errorf("Expiry selected %d results, Expired %d (or they differ)", len(got), len(want))
					}
					return
				}
				for _, s := range got {
					if !slices.Contains(want, s) {
						t.Errorf("undercounted Expiry selected %v, which Expired keeps", s)
					}
				}
			})
		}
	}
}
