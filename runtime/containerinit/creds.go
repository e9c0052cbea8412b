package containerinit

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// apply makes the calling thread run with the container's groups, group
// and user, for the exec that follows on that thread: the exec'd command
// takes the exec'ing thread's credentials and the other threads end with
// it. Go's syscall.Setgroups, Setgid and Setuid change every thread of the
// process instead (AllThreadsSyscall: the world stopped, each thread
// signalled to repeat the call), which cost the init about as much CPU as
// all the rest of its work. Package init functions run on the main
// thread, locked to it; the lock here keeps that so for whoever calls it.
func (i ids) apply() error {
	runtime.LockOSThread()
	gids := make([]uint32, len(i.groups))
	for n, g := range i.groups {
		gids[n] = uint32(g)
	}
	var list unsafe.Pointer
	if len(gids) > 0 {
		list = unsafe.Pointer(&gids[0])
	}
	if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(gids)), uintptr(list), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	gid, uid := uintptr(i.gid), uintptr(i.uid)
	if _, _, e := unix.RawSyscall(sysSetresgid, gid, gid, gid); e != 0 {
		return fmt.Errorf("setgid %d: %w", i.gid, e)
	}
	if _, _, e := unix.RawSyscall(sysSetresuid, uid, uid, uid); e != 0 {
		return fmt.Errorf("setuid %d: %w", i.uid, e)
	}
	return nil
}
