package shim

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
)

// NsenterBin joins a running container's namespaces for exec.
const NsenterBin = "/usr/bin/nsenter"

// Starter starts a container's process with Attr and waits for it: an
// exec.Cmd's Start and Wait, or the shim's own os.StartProcess (see
// StartInit).
type Starter struct {
	Attr  *syscall.SysProcAttr
	Start func() error
	Wait  func()
}

// OnThreadOfItsOwn runs fn in a new goroutine locked to an OS thread that
// ends with it. fn may change that thread's namespaces: the thread must not
// go back to Go's pool, so it is never unlocked (Go then ends it). Go
// cannot end the main thread, whose namespaces /proc/self also shows, so fn
// never runs there.
func OnThreadOfItsOwn(fn func()) {
	go func() {
		goruntime.LockOSThread()
		if syscall.Gettid() != syscall.Getpid() {
			fn()
			return
		}
		// Holding the main thread keeps the new goroutine off it.
		locked := make(chan struct{})
		go func() {
			goruntime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		goruntime.UnlockOSThread()
	}()
}

// SigtermIsDefault reports whether process pid neither catches nor ignores
// SIGTERM (false when its status cannot be read).
func SigtermIsDefault(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	const bit = 1 << (syscall.SIGTERM - 1)
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "SigIgn" && key != "SigCgt") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err != nil || mask&bit != 0 {
			return false
		}
		seen++
	}
	return seen == 2
}
