package periodic

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// loop runs Run in the background; passes reports each pass's number and
// Run's end closes done.
type loop struct {
	clk    *clocktesting.FakeClock
	wake   chan struct{}
	passes chan int
	failed chan error
	cancel context.CancelFunc
	done   chan struct{}
}

func startLoop(t *testing.T, failEvery int) *loop {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{
		clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), wake: make(chan struct{}, 1),
		passes: make(chan int, 10), failed: make(chan error, 10), cancel: cancel, done: make(chan struct{}),
	}
	n := 0
	pass := func(context.Context) error {
		n++
		l.passes <- n
		if failEvery > 0 && n%failEvery == 0 {
			return errors.New("boom")
		}
		return nil
	}
	go func() {
		defer close(l.done)
		Run(ctx, l.clk, time.Minute, l.wake, pass, func(err error) { l.failed <- err })
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

// waitTimer blocks until the loop waits on its timer.
func (l *loop) waitTimer(t *testing.T) {
	t.Helper()
	for !l.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
}

func TestRunPassesAtOnceThenEveryPeriod(t *testing.T) {
	l := startLoop(t, 0)
	if got := <-l.passes; got != 1 {
		t.Fatalf("first pass = %d, want 1", got)
	}
	l.waitTimer(t)
	l.clk.Step(time.Minute)
	if got := <-l.passes; got != 2 {
		t.Fatalf("pass after one period = %d, want 2", got)
	}
}

func TestRunWakesEarly(t *testing.T) {
	l := startLoop(t, 0)
	<-l.passes
	l.waitTimer(t)
	l.wake <- struct{}{}
	if got := <-l.passes; got != 2 {
		t.Fatalf("pass after wake = %d, want 2", got)
	}
}

func TestRunReportsFailuresAndGoesOn(t *testing.T) {
	l := startLoop(t, 1)
	<-l.passes
	if err := <-l.failed; err == nil || err.Error() != "boom" {
		t.Fatalf("failed got %v, want boom", err)
	}
	l.waitTimer(t)
	l.clk.Step(time.Minute)
	if got := <-l.passes; got != 2 {
		t.Fatalf("pass after a failure = %d, want 2", got)
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	l := startLoop(t, 0)
	<-l.passes
	l.cancel()
	<-l.done
	select {
	case n := <-l.passes:
		t.Fatalf("pass %d after the context ended", n)
	default:
	}
}
