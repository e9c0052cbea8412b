// Package cspawn starts the shim supervisor's container inits without
// copying the supervisor's descriptor table into each of them.
//
// A child that syscall.ForkExec starts gets a copy of its parent's whole
// descriptor table and closes its close-on-exec descriptors at the exec:
// the supervisor holds about six per running container, and every start
// paid for each (≈ 0.2 µs per descriptor held, ≈ 80 µs a start with 100
// containers in flight, over 1 ms with 1,000 running). Here the child
// shares the table (CLONE_FILES, with CLONE_VM | CLONE_VFORK as Go's
// forkExec) until its first system call, close_range(keep, ~0,
// CLOSE_RANGE_UNSHARE), gives it a table of its own with only the
// descriptors below keep: the few the supervisor opened first, and the
// spawner's reserved slots, onto which the parent duplicated the child's
// descriptors. The supervisor's own table and threads are untouched (a Go
// thread with a table of its own crashed the supervisor: see
// docs/benchmarks.md, session 9, branch supervisor).
//
// The child then does what Go's forkExec does for the init's attributes
// (signal handlers reset, CLONE_CLEAR_SIGHAND; the thread's signal mask;
// setsid; descriptors 0..n-1; chdir; the parent-death signal; the
// RLIMIT_NOFILE the process started with) with raw system calls on a
// stack of its own, and execs. Without cgo, on other architectures, or on
// kernels before 5.9, Available is false or Start reports !ok and the
// caller starts the child as before.
package cspawn
