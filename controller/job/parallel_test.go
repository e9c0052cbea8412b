package job

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

func TestCallPoolErrorsByIndex(t *testing.T) {
	for _, n := range []int{0, 1, 4, 33} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := newCallPool(defaultMaxIdleCallers)
			defer p.stop()
			errs := p.run(n, func(i int) error {
				if i%2 == 1 {
					return fmt.Errorf("item %d", i)
				}
				return nil
			})
			if len(errs) != n {
				t.Fatalf("errs = %d, want %d", len(errs), n)
			}
			for i, err := range errs {
				if want := i%2 == 1; (err != nil) != want || (want && err.Error() != fmt.Sprintf("item %d", i)) {
					t.Errorf("errs[%d] = %v", i, err)
				}
			}
		})
	}
}

// Every call of a run is in flight at once, as upstream's goroutine per
// pod: each call here returns only once all n have started.
func TestCallPoolRunsAllAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxIdle int
		n       int
	}{
		{"more calls than parked workers", 2, 50},
		{"no parked workers", 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newCallPool(tc.maxIdle)
			defer p.stop()
			for range 2 {
				var started sync.WaitGroup
				started.Add(tc.n)
				errs := p.run(tc.n, func(int) error {
					started.Done()
					started.Wait()
					return nil
				})
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A worker parks after its call and takes the next run's call; stop ends
// the parked workers, and a run after stop still completes.
func TestCallPoolReusesParkedWorkers(t *testing.T) {
	p := newCallPool(1)
	calls := 0
	count := func(int) error { calls++; return nil }
	p.run(1, count)
	for p.idle.Load() != 1 {
		runtime.Gosched()
	}
	p.run(1, count)
	if got := p.started.Load(); got != 1 {
		t.Errorf("workers started = %d, want 1 (the parked one reused)", got)
	}
	p.stop()
	if got := p.idle.Load(); got != 0 {
		t.Errorf("parked workers after stop = %d, want 0", got)
	}
	p.run(1, count)
	p.stop()
	if calls != 3 {
		t.Errorf("calls = %d, want 3", calls)
	}
}
