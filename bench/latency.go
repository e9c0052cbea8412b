package bench

import (
	"slices"
	"time"
)

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// ds, which it sorts; 0 when empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := int(p/100*float64(len(ds))+0.999999) - 1
	return ds[min(max(rank, 0), len(ds)-1)]
}

// stamps holds one observation time per pod index as microseconds since an
// origin, plus one so that zero means "not seen". 4 bytes a pod keeps a
// million-pod run cheap.
type stamps []uint32

func newStamps(n int) stamps { return make(stamps, n) }

// mark records t for index i unless one is recorded already.
func (s stamps) mark(i int, origin, t time.Time) {
	if i < 0 || i >= len(s) || s[i] != 0 {
		return
	}
	us := t.Sub(origin) / time.Microsecond
	s[i] = uint32(max(us, 0)) + 1
}

func (s stamps) at(i int) (time.Duration, bool) {
	if s[i] == 0 {
		return 0, false
	}
	return time.Duration(s[i]-1) * time.Microsecond, true
}

// gaps returns to[i]-from[i] for every index seen in both; a negative gap
// (the later event observed first, on another watch) counts as zero and is
// tallied in early.
func gaps(from, to stamps) (ds []time.Duration, early int) {
	for i := range from {
		a, ok1 := from.at(i)
		b, ok2 := to.at(i)
		if !ok1 || !ok2 {
			continue
		}
		d := b - a
		if d < 0 {
			d, early = 0, early+1
		}
		ds = append(ds, d)
	}
	return ds, early
}
