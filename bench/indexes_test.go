package bench

import (
	"slices"
	"testing"
	"time"
)

func TestEachNew(t *testing.T) {
	cases := []struct {
		prev, cur string
		want      []int
	}{
		{"", "0-3", []int{0, 1, 2, 3}},
		{"0-3", "0-3", nil},
		{"1,3", "0-4", []int{0, 2, 4}},
		{"0-1,5-6", "0-2,4-7,9", []int{2, 4, 7, 9}},
		{"2", "0-1,2,3", []int{0, 1, 3}},
	}
	for _, c := range cases {
		prev, err := parseIndexes(c.prev)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := parseIndexes(c.cur)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		eachNew(prev, cur, func(i int) { got = append(got, i) })
		if !slices.Equal(got, c.want) {
			t.Errorf("eachNew(%q, %q) = %v, want %v", c.prev, c.cur, got, c.want)
		}
	}
}

func TestParseIndexesRejectsGarbage(t *testing.T) {
	if _, err := parseIndexes("1,x-3"); err == nil {
		t.Fatal("parseIndexes accepted a non-number")
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 50); got != 50*time.Millisecond {
		t.Errorf("p50 = %v, want 50ms", got)
	}
	if got := percentile(ds, 99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

func TestGapsClampsEarlyObservations(t *testing.T) {
	origin := time.Unix(0, 0)
	from, to := newStamps(3), newStamps(3)
	from.mark(0, origin, origin.Add(time.Millisecond))
	to.mark(0, origin, origin.Add(3*time.Millisecond))
	from.mark(1, origin, origin.Add(5*time.Millisecond))
	to.mark(1, origin, origin.Add(4*time.Millisecond))
	from.mark(2, origin, origin.Add(time.Millisecond)) // never reached "to"
	ds, early := gaps(from, to)
	if !slices.Equal(ds, []time.Duration{2 * time.Millisecond, 0}) || early != 1 {
		t.Errorf("gaps = %v early %d, want [2ms 0] early 1", ds, early)
	}
}
