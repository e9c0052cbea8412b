package job

import (
	"sync"
	"sync/atomic"
)

// defaultMaxIdleCallers bounds the goroutines a callPool keeps parked
// between syncs: one sync's creations, deletions or finalizer removals
// (MaxPodCreateDeletePerSync, MaxUncountedPods) fit.
const defaultMaxIdleCallers = 512

// callPool runs a sync's per-pod API calls (creations, deletions,
// finalizer removals) all at once, one goroutine per call as upstream, on
// goroutines it keeps between syncs. A call through client-go is deep, and
// with the in-process transport the API server's handler and store write
// run on the calling goroutine too: a fresh goroutine grew its stack (a
// copy at each doubling, runtime.newstack) on every call, about 3 % of all
// CPU in the sim bench; a parked goroutine keeps most of its stack.
type callPool struct {
	tasks   chan func() // unbuffered: a send succeeds only to a parked worker
	done    chan struct{}
	stopped sync.Once
	idle    atomic.Int32
	maxIdle int32
	workers sync.WaitGroup
	started atomic.Int64 // workers ever started
}

func newCallPool(maxIdle int) *callPool {
	return &callPool{tasks: make(chan func()), done: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// run calls f for every index in 0..n-1 at once and returns, by index,
// what each returned.
func (p *callPool) run(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		p.submit(func() {
			defer wg.Done()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errs
}

// submit hands task to a parked worker, or starts a new one.
func (p *callPool) submit(task func()) {
	select {
	case p.tasks <- task:
	default:
		p.workers.Add(1)
		p.started.Add(1)
		go p.work(task)
	}
}

// work runs task, then parks for the next one unless maxIdle workers are
// parked already or the pool is stopped.
func (p *callPool) work(task func()) {
	defer p.workers.Done()
	for {
		task()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case task = <-p.tasks:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}

// stop ends the parked workers and waits for every worker to return. Calls
// of run after stop still complete, each on a goroutine of its own.
func (p *callPool) stop() {
	p.stopped.Do(func() { close(p.done) })
	p.workers.Wait()
}
