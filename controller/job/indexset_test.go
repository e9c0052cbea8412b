package job

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// referenceParseIndexSet is parseIndexSet as it was written first, with
// strings.Split: the rewrite must read every text the same way.
func referenceParseIndexSet(text string, completions int) indexSet {
	if text == "" {
		return nil
	}
	var out indexSet
	for _, frag := range strings.Split(text, ",") {
		bounds := strings.Split(frag, "-")
		first, err := strconv.Atoi(bounds[0])
		if err != nil {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(bounds) > 1 {
			if last, err = strconv.Atoi(bounds[1]); err != nil {
				continue
			}
			last = min(last, completions-1)
		}
		if n := len(out); n > 0 && out[n-1].last == first-1 {
			out[n-1].last = last
			continue
		}
		out = append(out, span{first, last})
	}
	return out
}

// referenceWithIndexes is withIndexes through union (append and sort).
func referenceWithIndexes(s indexSet, ixs []int) indexSet {
	o := make(indexSet, 0, len(ixs))
	for _, ix := range ixs {
		o = append(o, span{ix, ix})
	}
	return s.union(o)
}

func TestParseIndexSetCorruptText(t *testing.T) {
	for _, text := range []string{
		"", "0", "0-4", "0,1", "0-2,3,5-7", "a", "1,a,3", "1-a,4", "-3,5", "5-3,9", "1-2-3,7", "1--4,8",
		"0-4,3-9", "9,2,4", "+3,7", "2-+5", ",,1,,", "1-", "0-100", "50", "3-4,5-6,8", "99999999999999999999,1",
	} {
		got, want := parseIndexSet(text, 20), referenceParseIndexSet(text, 20)
		if !slices.Equal(got, want) {
			t.Errorf("parseIndexSet(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestIndexSetRandom compares parsing, String and withIndexes with the
// reference forms on random sets, canonical or not.
func TestIndexSetRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const completions = 200
	for range 5000 {
		var parts []string
		for range rng.IntN(12) {
			first := rng.IntN(completions + 20)
			switch rng.IntN(4) {
			case 0:
				parts = append(parts, strconv.Itoa(first))
			case 1, 2:
				parts = append(parts, strconv.Itoa(first)+"-"+strconv.Itoa(first+rng.IntN(30)))
			default: // out of order or reversed
				parts = append(parts, strconv.Itoa(first)+"-"+strconv.Itoa(max(first-rng.IntN(5), 0)))
			}
		}
		if rng.IntN(2) == 0 { // mostly well-formed: sorted and merged
			var ixs []int
			for range rng.IntN(40) {
				ixs = append(ixs, rng.IntN(completions))
			}
			parts = strings.Split(referenceWithIndexes(nil, dedupSorted(ixs)).String(), ",")
		}
		text := strings.Join(parts, ",")
		s := parseIndexSet(text, completions)
		if want := referenceParseIndexSet(text, completions); !slices.Equal(s, want) {
			t.Fatalf("parseIndexSet(%q) = %v, want %v", text, s, want)
		}
		var ixs []int
		for range rng.IntN(20) {
			ixs = append(ixs, rng.IntN(completions+5))
		}
		if rng.IntN(3) > 0 {
			ixs = dedupSorted(ixs)
		}
		got, want := s.withIndexes(ixs), referenceWithIndexes(s, ixs)
		if !slices.Equal(got, want) {
			t.Fatalf("%v.withIndexes(%v) = %v, want %v", s, ixs, got, want)
		}
		if got.String() != want.String() {
			t.Fatalf("String of %v = %q, want %q", got, got.String(), want.String())
		}
		if round := parseIndexSet(got.String(), completions+5); got.canonical() && !slices.Equal(round, got) {
			t.Fatalf("%v does not survive String and parse: %v", got, round)
		}
	}
}

func TestIndexSetString(t *testing.T) {
	s := indexSet{{0, 0}, {2, 3}, {5, 9}, {100, 100}, {1000000, 1000002}}
	if got, want := s.String(), "0,2,3,5-9,100,1000000-1000002"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := indexSet(nil).String(); got != "" {
		t.Errorf("String of nil = %q", got)
	}
}
