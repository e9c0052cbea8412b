package results

import (
	"cmp"
	"container/heap"
	"slices"
	"sort"
	"strings"
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

// Expiry is Expired over results seen one at a time (pages of a list),
// holding only candidates: the aged ones and, when the number of results
// is known, the oldest others up to that number less MaxCount. A sweep of
// 100,000 kept results then holds the few it deletes, not all of them.
type Expiry struct {
	r      Retention
	cutoff time.Time // zero: no age bound
	bound  int       // most non-aged candidates kept; -1: all
	aged   []Stored
	oldest storedHeap // newest on top
	others int        // non-aged results seen
}

// NewExpiry starts an Expiry at now for total results (-1: unknown). An
// undercount only makes it expire fewer than Expired would.
func (r Retention) NewExpiry(now time.Time, total int) *Expiry {
	e := &Expiry{r: r, bound: -1}
	if r.MaxAge > 0 {
		e.cutoff = now.Add(-r.MaxAge)
	}
	switch {
	case r.MaxCount <= 0:
		e.bound = 0
	case total >= 0:
		e.bound = max(total-r.MaxCount, 0)
	}
	return e
}

// Add sees one result.
func (e *Expiry) Add(s Stored) {
	if !e.cutoff.IsZero() && s.FinishedAt.Before(e.cutoff) {
		e.aged = append(e.aged, s)
		return
	}
	e.others++
	if e.bound == 0 {
		return
	}
	heap.Push(&e.oldest, s)
	if e.bound > 0 && e.oldest.Len() > e.bound {
		heap.Pop(&e.oldest)
	}
}

// Seen is how many results Add saw.
func (e *Expiry) Seen() int { return len(e.aged) + e.others }

// Expired returns what Retention.Expired would for the results seen.
func (e *Expiry) Expired() []Stored {
	out := slices.Clone(e.aged)
	slices.SortStableFunc(out, compareStored)
	if e.r.MaxCount > 0 && e.others > e.r.MaxCount {
		old := slices.Clone(e.oldest)
		slices.SortStableFunc(old, compareStored)
		out = append(out, old[:min(e.others-e.r.MaxCount, len(old))]...)
	}
	return out
}

// compareStored orders results oldest first, then by namespace and name.
func compareStored(a, b Stored) int {
	if c := a.FinishedAt.Compare(b.FinishedAt); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// storedHeap is a max-heap of results in compareStored order.
type storedHeap []Stored

func (h storedHeap) Len() int           { return len(h) }
func (h storedHeap) Less(i, j int) bool { return compareStored(h[i], h[j]) > 0 }
func (h storedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *storedHeap) Push(x any)        { *h = append(*h, x.(Stored)) }
func (h *storedHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
