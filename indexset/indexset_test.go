package indexset

import (
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for text, set := range map[string][]bool{
		"":          {false, false, false},
		"0":         {true, false, false},
		"0,1":       {true, true, false},
		"0-2":       {true, true, true},
		"0,2":       {true, false, true},
		"1-3,5,6,8": {false, true, true, true, false, true, true, false, true},
	} {
		if got := Format(set); got != text {
			t.Errorf("Format(%v) = %q, want %q", set, got, text)
		}
		got, err := Parse(text, len(set))
		if err != nil || !slices.Equal(got, set) {
			t.Errorf("Parse(%q) = %v, %v, want %v", text, got, err, set)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for text, want := range map[string]string{
		"x":    `index "x": strconv.Atoi: parsing "x": invalid syntax`,
		"1-x":  `index "x": strconv.Atoi: parsing "x": invalid syntax`,
		"0-3":  `interval "0-3" out of 0-2`,
		"2-1":  `interval "2-1" out of 0-2`,
		"-1":   `index "": strconv.Atoi: parsing "": invalid syntax`,
		"1,,2": `index "": strconv.Atoi: parsing "": invalid syntax`,
	} {
		if _, err := Parse(text, 3); err == nil || err.Error() != want {
			t.Errorf("Parse(%q, 3) error = %v, want %q", text, err, want)
		}
	}
}
