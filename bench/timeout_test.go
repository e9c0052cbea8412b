package bench

import (
	"testing"
	"time"
)

// A scenario runs under --timeout when given, else its own bound: the 1M
// scale run gets hours, the others 30 minutes.
func TestScenarioTimeout(t *testing.T) {
	byName := func(name string) scenario {
		for _, s := range scenarios {
			if s.name == name {
				return s
			}
		}
		t.Fatalf("no scenario %q", name)
		return scenario{}
	}
	for _, tc := range []struct {
		scenario string
		flag     time.Duration
		want     time.Duration
	}{
		{"sim", 0, 30 * time.Minute},
		{"scale", 0, 2 * time.Hour},
		{"scale", 5 * time.Minute, 5 * time.Minute},
		{"process", time.Hour, time.Hour},
	} {
		if got := byName(tc.scenario).timeoutFor(Config{Timeout: tc.flag}); got != tc.want {
			t.Errorf("%s with --timeout %v: %v, want %v", tc.scenario, tc.flag, got, tc.want)
		}
	}
}
