// Package memtarget keeps a server with a small live heap under a memory
// target without making a large one pay for it.
//
// batchlet collects garbage at 200 % of the live heap (cmd/batchlet), which
// takes about a tenth off the CPU. With a live heap of 60-80 MB (sim
// 100,000 x 1,000 with the counted pod GC) that lets the heap grow to
// 180-240 MB between collections. A fixed soft memory limit
// (debug.SetMemoryLimit, GOMEMLIMIT) would cap that, but a fixed limit is a
// target the collector chases whatever the live heap is: with the default
// threshold pod GC the live heap of sim 20,000 is about 300 MB, and Go
// then collects continuously (up to its 50 % CPU cap). So the Governor
// sets a limit that follows the live heap: the target while the live heap
// is at most half of it, then closing on GOGC's heap goal, and none once
// the live heap is three quarters of the target (see limitFor). A live
// heap that jumps for a moment (a burst of writes) then moves the limit a
// little, not from the target to none.
package memtarget

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultTarget is the memory limit while the live heap is small: issue
// 16's goal is a peak anonymous RSS under 200 MB for sim 100,000 x 1,000,
// and Go's accounting (all of its mapped memory, also released pages not
// yet returned) runs a few MB above the process's anonymous RSS.
const DefaultTarget = 192 << 20

// DefaultInterval is how often the Governor reads the live heap: it
// changes with what is in flight, over seconds.
const DefaultInterval = 500 * time.Millisecond

// noLimit is the runtime's "no memory limit".
const noLimit = math.MaxInt64

// Governor sets the soft memory limit from the live heap.
type Governor struct {
	// Target is the limit while the live heap is small (bytes).
	Target uint64
	// Read returns the live heap (bytes) as of the last collection and
	// the GC percent (GOGC; negative when off).
	Read func() (live uint64, gcPercent int64)
	// SetLimit sets the soft memory limit (debug.SetMemoryLimit).
	SetLimit func(int64) int64

	limit int64 // last set; 0 before the first Step
}

// New is a Governor of the running process for target bytes.
func New(target uint64) *Governor {
	return &Governor{Target: target, Read: readRuntime, SetLimit: debug.SetMemoryLimit}
}

// Run adjusts the limit every interval until ctx ends, then lifts it.
func (g *Governor) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	defer g.SetLimit(noLimit)
	for {
		g.Step()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step reads the live heap once and sets the limit for it when that
// changed; it returns the limit.
func (g *Governor) Step() int64 {
	live, gcPercent := g.Read()
	limit := limitFor(live, gcPercent, g.Target)
	if limit != g.limit {
		g.SetLimit(limit)
		g.limit = limit
	}
	return limit
}

// limitFor is the memory limit for a live heap of live bytes collected at
// gcPercent. While GOGC's heap goal, live*(1+gcPercent/100), is at most
// the target and a half (a live heap of at most half the target at
// GOGC=200) it is the target: the collector then has at least the live
// heap, less the runtime's own memory, to grow into. Over that, the limit
// is the goal less an allowance that shrinks from half the target to
// nothing as the goal grows by another three quarters of the target (a
// live heap of three quarters of the target at GOGC=200), and none
// beyond: a large live heap (the threshold pod GC's 300 MB) then costs
// nothing over GOGC, whose collections are the expensive ones, while one
// at the edge moves the limit a little rather than lifting it. No limit
// with the collector off.
func limitFor(live uint64, gcPercent int64, target uint64) int64 {
	if gcPercent < 0 || target == 0 {
		return noLimit
	}
	t := float64(target)
	goal := float64(live) * (1 + float64(gcPercent)/100)
	over := goal - 1.5*t // how far the goal is past the target's reach
	switch {
	case over <= 0:
		return int64(target)
	case over >= 0.75*t:
		return noLimit
	}
	allowance := t / 2 * (1 - over/(0.75*t))
	return int64(goal - allowance)
}

// readRuntime reads the live heap as of the last collection (0 before the
// first) and GOGC from the runtime.
func readRuntime() (uint64, int64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	var live uint64
	gcPercent := int64(100)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		// GOGC=off reads as uint64(-1).
		gcPercent = -1
		if v := s[1].Value.Uint64(); v <= math.MaxInt32 {
			gcPercent = int64(v)
		}
	}
	return live, gcPercent
}
