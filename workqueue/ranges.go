package workqueue

import (
	"fmt"
	"strconv"
	"strings"
)

// formatRanges writes the set indexes as "0-4,7", as a Job's
// completedIndexes.
func formatRanges(set []bool) string {
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
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(j))
		}
		i = j
	}
	return b.String()
}

// parseRanges reads formatRanges' output for n items.
func parseRanges(s string, n int) ([]bool, error) {
	set := make([]bool, n)
	if s == "" {
		return set, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("workqueue: completed %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("workqueue: completed %q: %w", s, err)
			}
		}
		if first < 0 || last < first || last >= n {
			return nil, fmt.Errorf("workqueue: completed %q: range %s outside 0-%d", s, part, n-1)
		}
		for i := first; i <= last; i++ {
			set[i] = true
		}
	}
	return set, nil
}
