package scheduler

import "sync"

// writers runs the scheduler's asynchronous API writes (bindings,
// unschedulable conditions, evictions), at most limit at once, on
// goroutines it keeps parked between writes. A binding through the
// in-process client runs the API server's handler and store write on the
// calling goroutine: a fresh goroutine per binding grew its stack (a copy
// at each doubling, runtime.newstack) on every pod, as the Job
// controller's callPool found for its calls.
type writers struct {
	sem     chan struct{} // one token per running write: the bound
	tasks   chan func()   // unbuffered: a send succeeds only to a parked worker
	done    chan struct{}
	stopped sync.Once
	running sync.WaitGroup // writes submitted and not finished
	workers sync.WaitGroup // goroutines started and not returned
}

func newWriters(limit int) *writers {
	return &writers{sem: make(chan struct{}, max(limit, 1)), tasks: make(chan func()), done: make(chan struct{})}
}

// submit runs fn on a parked worker, or a new one, once fewer than limit
// writes run; it blocks until then, as the semaphore it replaces did.
func (w *writers) submit(fn func()) {
	w.sem <- struct{}{}
	w.running.Add(1)
	task := func() {
		defer func() { <-w.sem; w.running.Done() }()
		fn()
	}
	select {
	case w.tasks <- task:
	default:
		w.workers.Add(1)
		go w.work(task)
	}
}

// work runs task, then parks for the next one until stop. At most limit
// workers exist: a worker is started only when none is parked, and only
// limit tasks run at once.
func (w *writers) work(task func()) {
	defer w.workers.Done()
	for {
		task()
		select {
		case task = <-w.tasks:
		case <-w.done:
			return
		}
	}
}

// wait blocks until every submitted write finished.
func (w *writers) wait() { w.running.Wait() }

// stop waits for the writes, then ends the parked workers.
func (w *writers) stop() {
	w.wait()
	w.stopped.Do(func() { close(w.done) })
	w.workers.Wait()
}
