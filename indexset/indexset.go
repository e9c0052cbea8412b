// Package indexset reads and writes sets of indexes in the interval
// notation of a Job's status.completedIndexes ("0,2-5,7"), for the tools
// that keep such sets of their own (batchlet rerun, the work queue).
package indexset

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads text as a set of indexes below n. Unlike the Job
// controller, which skips what it cannot read in a status it did not
// write, it refuses malformed or out-of-range intervals.
func Parse(text string, n int) ([]bool, error) {
	set := make([]bool, n)
	if text == "" {
		return set, nil
	}
	for _, part := range strings.Split(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", lo, err)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("index %q: %w", hi, err)
			}
		}
		if first < 0 || last < first || last >= n {
			return nil, fmt.Errorf("interval %q out of 0-%d", part, n-1)
		}
		for i := first; i <= last; i++ {
			set[i] = true
		}
	}
	return set, nil
}

// Format writes the indexes in set as the Job controller writes
// completedIndexes: a run of three or more as "first-last", a pair as
// "a,b".
func Format(set []bool) string {
	var b strings.Builder
	for i := 0; i < len(set); i++ {
		if !set[i] {
			continue
		}
		j := i
		for j+1 < len(set) && set[j+1] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		switch {
		case j == i+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(j))
		case j > i+1:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(j))
		}
		i = j
	}
	return b.String()
}
