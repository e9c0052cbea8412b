package scheduler

import (
	"sync"
	"sync/atomic"
	"testing"
)

// writers runs every submitted write, never more than its limit at once,
// reuses parked workers, and stop returns once they all ended.
func TestWritersBoundAndReuse(t *testing.T) {
	const limit, n = 3, 200
	w := newWriters(limit)
	var running, peak, ran atomic.Int32
	gate := make(chan struct{})
	var firstWave sync.WaitGroup
	firstWave.Add(limit)
	for i := range n {
		if i == limit {
			// The first limit writes hold every token: the next submit
			// blocks until the gate opens.
			go func() { firstWave.Wait(); close(gate) }()
		}
		w.submit(func() {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			if ran.Add(1) <= limit {
				firstWave.Done()
				<-gate
			}
			running.Add(-1)
		})
	}
	w.stop()
	if ran.Load() != n {
		t.Errorf("ran %d writes, want %d", ran.Load(), n)
	}
	if peak.Load() > limit {
		t.Errorf("%d writes ran at once, limit %d", peak.Load(), limit)
	}
	if peak.Load() < limit {
		t.Errorf("at most %d writes ran at once, want the limit %d reached", peak.Load(), limit)
	}
}
