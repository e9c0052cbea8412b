package memtarget

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

const mib = 1 << 20

func TestLimitFor(t *testing.T) {
	const target = 200 * mib
	tests := []struct {
		name      string
		live      uint64
		gcPercent int64
		want      int64
	}{
		{"no collection yet", 0, 200, target},
		{"small heap", 60 * mib, 200, target},
		{"half the target", 100 * mib, 200, target},
		{"a little over half: goal less most of the allowance", 110 * mib, 200, 330*mib - 80*mib},
		{"five eighths: goal less half the allowance", 125 * mib, 200, 375*mib - 50*mib},
		{"three quarters: no limit", 150 * mib, 200, math.MaxInt64},
		{"a large heap: no limit", 1000 * mib, 200, math.MaxInt64},
		{"GOGC=100 keeps the target up to three quarters", 150 * mib, 100, target},
		{"GOGC=100 between", 375 * mib / 2, 100, 375*mib - 50*mib},
		{"GOGC=off", 10 * mib, -1, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limitFor(tt.live, tt.gcPercent, target); got != tt.want {
				t.Errorf("limitFor(%d MiB, %d, 200 MiB) = %d MiB, want %d MiB", tt.live/mib, tt.gcPercent, got/mib, tt.want/mib)
			}
		})
	}
}

// fakeRuntime is a live heap that steps through values and records the
// limits set.
type fakeRuntime struct {
	live   []uint64
	limits []int64
}

func (f *fakeRuntime) governor(target uint64) *Governor {
	return &Governor{
		Target: target,
		Read: func() (uint64, int64) {
			v := f.live[0]
			f.live = f.live[1:]
			return v, 200
		},
		SetLimit: func(l int64) int64 {
			f.limits = append(f.limits, l)
			return 0
		},
	}
}

func TestStepSetsTheLimitWhenItChanges(t *testing.T) {
	const none = -1
	tests := []struct {
		name       string
		live       []uint64 // MiB, one per step
		wantLimits []int64  // MiB, or none
	}{
		{
			name:       "stays small",
			live:       []uint64{1, 20, 60, 90},
			wantLimits: []int64{200},
		},
		{
			name:       "grows and shrinks",
			live:       []uint64{10, 60, 125, 125, 60, 400, 60},
			wantLimits: []int64{200, 325, 200, none, 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuntime{}
			for _, v := range tt.live {
				f.live = append(f.live, v*mib)
			}
			g := f.governor(200 * mib)
			for range tt.live {
				g.Step()
			}
			want := make([]int64, len(tt.wantLimits))
			for i, l := range tt.wantLimits {
				want[i] = l * mib
				if l == none {
					want[i] = math.MaxInt64
				}
			}
			if !slices.Equal(f.limits, want) {
				t.Errorf("limits set = %v, want %v", f.limits, want)
			}
		})
	}
}

func TestRunLiftsTheLimitWhenDone(t *testing.T) {
	f := &fakeRuntime{live: []uint64{10 * mib}}
	g := f.governor(100 * mib)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Run(ctx, DefaultInterval)
	want := []int64{100 * mib, math.MaxInt64}
	if !slices.Equal(f.limits, want) {
		t.Errorf("limits set = %v, want %v", f.limits, want)
	}
}

func TestReadRuntime(t *testing.T) {
	// A renamed metric would leave the Governor reading a live heap of 0
	// (the target forever) or the wrong GOGC.
	keep := make([][]byte, 0, 16)
	for range 16 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC()
	live, _ := readRuntime()
	if live < 16<<20 {
		t.Errorf("live heap after a collection = %d bytes, want at least the 16 MiB kept", live)
	}
	runtime.KeepAlive(keep)

	for _, percent := range []int{150, -1} {
		old := debug.SetGCPercent(percent)
		_, got := readRuntime()
		debug.SetGCPercent(old)
		if got != int64(percent) {
			t.Errorf("GC percent read with SetGCPercent(%d) = %d", percent, got)
		}
	}
}
