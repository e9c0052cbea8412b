package shim

import (
	"os"

	"github.com/batchlet/batchlet/runtime/shim/cspawn"
)

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
	// inits, when set, starts container inits without copying the
	// supervisor's descriptor table into them (runtime/shim/cspawn); used
	// from the spawner's thread only.
	inits *cspawn.Spawner
}

// newSpawner starts the spawner's thread.
func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan func())}
	if cspawn.Available {
		sp.inits, _ = cspawn.New() // nil: inits start as other children do
	}
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

// startInit starts a container init with procAttr (startInit's attributes:
// a session of its own, the parent-death signal, new namespaces) through
// sp.inits, on the spawner's thread. ok is false when it cannot (no C
// start in this build, or a kernel without what it needs): nothing was
// started. Errors are startProcess's ("fork/exec <path>: <errno>").
func (sp *spawner) startInit(path string, argv []string, procAttr *os.ProcAttr) (pid int, ok bool, err error) {
	if sp == nil || sp.inits == nil {
		return 0, false, nil
	}
	sys := procAttr.Sys
	if !sys.Setsid || sys.Setpgid || sys.Credential != nil || sys.Pdeathsig == 0 {
		return 0, false, nil // not an init's start: syscall.ForkExec's
	}
	attr := cspawn.Attr{Env: procAttr.Env, Dir: procAttr.Dir, Cloneflags: sys.Cloneflags, CgroupFD: -1, Pdeathsig: sys.Pdeathsig}
	if sys.UseCgroupFD {
		attr.CgroupFD = sys.CgroupFD
	}
	for _, f := range procAttr.Files {
		attr.Files = append(attr.Files, int(f.Fd())) // blocking again, as os.StartProcess makes it
	}
	pid, ok, err = sp.inits.Start(path, argv, attr)
	if err != nil {
		err = &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return pid, ok, err
}
