package shim

// spawner starts the supervisor's containers from one OS thread that never
// ends. A container's parent-death signal fires when the thread that
// started it ends; a thread of its own per container (OnThreadOfItsOwn, as
// a shim of one container does) ties the container to the supervisor just
// as well, but costs every container a thread's creation and end (a
// pthread with its stack, as the shim links cgo). From a thread that lives
// as long as the supervisor, the signal still fires exactly when the
// supervisor dies, and the containers are waited for from ordinary
// goroutines.
type spawner struct {
	reqs chan func()
}

// newSpawner starts the spawner's thread.
func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan func())}
	OnThreadOfItsOwn(func() {
		for fn := range sp.reqs {
			fn()
		}
	})
	return sp
}

// start runs s.Start on the spawner's thread, then, unless it failed,
// onStart (when set) and s.Wait on a goroutine that closes exited once
// the process has been waited for. onStart runs before the process can be
// reaped, as StartInit's does.
func (sp *spawner) start(s Starter, onStart func(), exited chan<- struct{}) error {
	done := make(chan error, 1)
	sp.reqs <- func() { done <- s.Start() }
	if err := <-done; err != nil {
		return err
	}
	if onStart != nil {
		onStart()
	}
	go func() {
		s.Wait()
		close(exited)
	}()
	return nil
}
