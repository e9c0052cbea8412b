package cspawn

import "syscall"

// Attr is how a child starts, as syscall.ForkExec's ProcAttr and
// SysProcAttr give it: Files become its descriptors 0..len(Files)-1;
// it runs in a session of its own with Pdeathsig, in new namespaces
// (Cloneflags) and, when CgroupFD >= 0, in that cgroup from the start.
type Attr struct {
	Env        []string
	Dir        string
	Files      []int
	Cloneflags uintptr
	CgroupFD   int
	Pdeathsig  syscall.Signal
}
