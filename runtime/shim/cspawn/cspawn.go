//go:build cgo && linux && amd64

package cspawn

/*
#include <stdlib.h>
#include "spawn.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unsafe"
)

// Available reports whether this build has the C start.
const Available = true

// Spawner starts container inits (see the package comment). Its methods
// must be called from one thread at a time: the supervisor's spawner
// thread.
type Spawner struct {
	stack     unsafe.Pointer
	reserved  [C.SPAWN_FDS]int
	devnull   int
	keepBelow int
	// disabled is set once the kernel lacked a feature: Start then always
	// reports ok false.
	disabled bool
}

// New opens the spawner's reserved descriptors (on /dev/null, close-on-exec)
// and maps its children's stack. Call it early, while the process holds
// few descriptors: every descriptor below the highest reserved one is
// copied into each child.
func New() (*Spawner, error) {
	s := &Spawner{devnull: -1}
	fds := make([]int, 0, len(s.reserved)+1)
	for range len(s.reserved) + 1 {
		fd, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			return nil, fmt.Errorf("open /dev/null: %w", err)
		}
		fds = append(fds, fd)
	}
	s.devnull = fds[len(fds)-1]
	for i := range s.reserved {
		s.reserved[i] = fds[i]
		s.keepBelow = max(s.keepBelow, fds[i]+1)
	}
	if s.stack = C.batchlet_spawn_stack(); s.stack == nil {
		s.Close()
		return nil, errors.New("map the spawn stack: out of memory")
	}
	return s, nil
}

// Close releases the descriptors and the stack.
func (s *Spawner) Close() {
	for _, fd := range s.reserved {
		if fd > 0 {
			syscall.Close(fd)
		}
	}
	if s.devnull >= 0 {
		syscall.Close(s.devnull)
	}
	if s.stack != nil {
		syscall.Syscall(syscall.SYS_MUNMAP, uintptr(s.stack), C.SPAWN_STACK, 0)
		s.stack = nil
	}
}

// Start starts path with argv as a child of this process and returns its
// pid once it has exec'd, or the errno of the step that failed (the child
// reaped), as syscall.ForkExec does. ok is false when this kernel lacks
// what the start needs (clone3 with CLONE_CLEAR_SIGHAND and
// CLONE_INTO_CGROUP, close_range with CLOSE_RANGE_UNSHARE: Linux 5.9):
// nothing was started and the caller starts the child another way.
func (s *Spawner) Start(path string, argv []string, attr Attr) (pid int, ok bool, err error) {
	if s.disabled || len(attr.Files) > len(s.reserved) {
		return 0, false, nil
	}
	if hasNUL(path, attr.Dir) || hasNUL(argv...) || hasNUL(attr.Env...) {
		return 0, true, syscall.EINVAL // as syscall.ForkExec, which cannot pass them either
	}
	q := (*C.struct_spawn_req)(C.calloc(1, C.sizeof_struct_spawn_req))
	defer C.free(unsafe.Pointer(q))
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	cstr := func(v string) *C.char {
		p := C.CString(v)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	carr := func(vs []string) **C.char {
		a := (*[1 << 20]*C.char)(C.calloc(C.size_t(len(vs)+1), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		frees = append(frees, unsafe.Pointer(a))
		for i, v := range vs {
			a[i] = cstr(v)
		}
		return &a[0]
	}
	q.path, q.argv, q.envp, q.dir = cstr(path), carr(argv), carr(attr.Env), cstr(attr.Dir)
	q.nfds = C.int(len(attr.Files))
	for i, fd := range attr.Files {
		q.fds[i] = C.int(fd)
	}
	for i, fd := range s.reserved {
		q.reserved[i] = C.int(fd)
	}
	q.keep_below, q.devnull = C.int(s.keepBelow), C.int(s.devnull)
	q.cloneflags = C.uint64_t(attr.Cloneflags)
	q.cgroup_fd = C.int(attr.CgroupFD)
	q.pdeathsig = C.int(attr.Pdeathsig)
	q.stack = s.stack
	r := int(C.batchlet_spawn(q))
	if r > 0 && q.err != 0 {
		waitChild(r)
	}
	switch {
	case q.unsupported != 0:
		// A cgroup's EINVAL may be the cgroup's: only this start falls
		// back (and reports it) then.
		s.disabled = r > 0 || attr.CgroupFD < 0
		return 0, false, nil
	case r < 0:
		return 0, true, syscall.Errno(-r)
	case q.err != 0:
		return 0, true, syscall.Errno(q.err)
	}
	return r, true, nil
}

// waitChild reaps a child that failed before its exec.
func waitChild(pid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

func hasNUL(vs ...string) bool {
	for _, v := range vs {
		if strings.IndexByte(v, 0) >= 0 {
			return true
		}
	}
	return false
}
