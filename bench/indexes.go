package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// interval is an inclusive range of completion indexes.
type interval struct{ lo, hi int }

// parseIndexes parses a Job's completedIndexes ("1,3-5,7").
func parseIndexes(s string) ([]interval, error) {
	if s == "" {
		return nil, nil
	}
	var out []interval
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("completedIndexes %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("completedIndexes %q: %w", s, err)
			}
		}
		out = append(out, interval{a, b})
	}
	return out, nil
}

// eachNew calls fn for every index in cur not covered by prev. Both lists
// are sorted and disjoint, as the Job controller writes them; the cost is
// the number of intervals plus the number of new indexes.
func eachNew(prev, cur []interval, fn func(int)) {
	j := 0
	for _, c := range cur {
		next := c.lo
		for j < len(prev) && prev[j].hi < c.lo {
			j++
		}
		for k := j; k < len(prev) && prev[k].lo <= c.hi; k++ {
			for i := next; i < prev[k].lo && i <= c.hi; i++ {
				fn(i)
			}
			next = max(next, prev[k].hi+1)
		}
		for i := next; i <= c.hi; i++ {
			fn(i)
		}
	}
}
