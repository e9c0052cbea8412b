package process

import (
	"testing"
	"time"
)

func TestRestartDelay(t *testing.T) {
	cases := []struct {
		name            string
		prev, ran       time.Duration
		wantDelay, next time.Duration
	}{
		{"first restart is immediate", 0, time.Second, 0, 10 * time.Second},
		{"second waits 10s", 10 * time.Second, time.Second, 10 * time.Second, 20 * time.Second},
		{"doubles", 40 * time.Second, time.Second, 40 * time.Second, 80 * time.Second},
		{"caps at 5 minutes", 160 * time.Second, time.Second, 160 * time.Second, 5 * time.Minute},
		{"stays at 5 minutes", 5 * time.Minute, time.Second, 5 * time.Minute, 5 * time.Minute},
		{"reset after 10 minutes running", 5 * time.Minute, 10 * time.Minute, 0, 10 * time.Second},
		{"no reset just before 10 minutes", 20 * time.Second, 10*time.Minute - time.Second, 20 * time.Second, 40 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, n := restartDelay(tc.prev, tc.ran)
			if d != tc.wantDelay || n != tc.next {
				t.Fatalf("restartDelay(%v, %v) = %v, %v; want %v, %v", tc.prev, tc.ran, d, n, tc.wantDelay, tc.next)
			}
		})
	}
}

func TestShouldRestart(t *testing.T) {
	cases := []struct {
		policy string
		code   int32
		want   bool
	}{
		{"Always", 0, true}, {"Always", 1, true},
		{"OnFailure", 0, false}, {"OnFailure", 2, true},
		{"Never", 0, false}, {"Never", 1, false},
	}
	for _, tc := range cases {
		if got := shouldRestart(tc.policy, tc.code); got != tc.want {
			t.Errorf("shouldRestart(%s, %d) = %v", tc.policy, tc.code, got)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	cases := map[string]string{
		"$(A)":         "x",
		"$(A)-$(B)":    "x-y",
		"$$(A)":        "$(A)",
		"$$":           "$",
		"$(MISSING)":   "$(MISSING)",
		"$A":           "$A",
		"$(A":          "$(A",
		"a$":           "a$",
		"$$$(A)":       "$x",
		"no refs here": "no refs here",
	}
	for in, want := range cases {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
