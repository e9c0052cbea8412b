package bolt

import "time"

// revSample is the current revision seen by the compactor at a time.
type revSample struct {
	at  time.Time
	rev int64
}

// compactTarget decides how far to compact: keep the last keep revisions
// and, when byAge, nothing that was already current at cutoff. It returns
// the target and the samples still needed later (those after cutoff, plus
// the latest one at or before it).
func compactTarget(cur, keep int64, cutoff time.Time, byAge bool, samples []revSample) (int64, []revSample) {
	target := cur - keep
	if !byAge {
		return max(target, 0), nil
	}
	last := -1
	for i, s := range samples {
		if !s.at.After(cutoff) {
			last = i
		}
	}
	if last >= 0 {
		target = max(target, samples[last].rev)
		samples = samples[last:]
	}
	return max(target, 0), samples
}
