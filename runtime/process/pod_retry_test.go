package process

import (
	"testing"
	"time"
)

func TestNextMountRetry(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = nextMountRetry(d)
		got = append(got, d)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 122 * time.Second, 122 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("retries = %v, want %v", got, want)
		}
	}
}
