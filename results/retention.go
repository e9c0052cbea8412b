package results

import (
	"sort"
	"time"
)

// Retention bounds the kept results: by age (MaxAge, 0 keeps any age) and
// by number (MaxCount, 0 keeps any number), oldest first.
type Retention struct {
	MaxAge   time.Duration
	MaxCount int
}

// Stored is what the retention decides from: one result's namespace, name
// and when it finished (its creation time when unset).
type Stored struct {
	Namespace, Name string
	FinishedAt      time.Time
}

// Expired returns the results to delete at now: those finished more than
// MaxAge ago, then the oldest beyond MaxCount. The input is not modified.
func (r Retention) Expired(items []Stored, now time.Time) []Stored {
	sorted := append([]Stored(nil), items...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].FinishedAt.Equal(sorted[j].FinishedAt) {
			return sorted[i].FinishedAt.Before(sorted[j].FinishedAt)
		}
		if sorted[i].Namespace != sorted[j].Namespace {
			return sorted[i].Namespace < sorted[j].Namespace
		}
		return sorted[i].Name < sorted[j].Name
	})
	n := 0
	if r.MaxAge > 0 {
		cutoff := now.Add(-r.MaxAge)
		for n < len(sorted) && sorted[n].FinishedAt.Before(cutoff) {
			n++
		}
	}
	if r.MaxCount > 0 && len(sorted)-n > r.MaxCount {
		n = len(sorted) - r.MaxCount
	}
	return sorted[:n]
}
