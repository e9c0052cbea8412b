//go:build cgo && linux && amd64

// The supervisor's start of a container init without copying its
// descriptor table: see doc.go. The child shares the supervisor's memory
// and descriptor table (CLONE_VM | CLONE_VFORK | CLONE_FILES) until its
// first system call gives it a table of its own holding only the
// descriptors below keep_below (close_range with CLOSE_RANGE_UNSHARE):
// the supervisor's descriptors of running containers are neither copied
// into it nor closed at its exec. It runs on a stack of its own, makes
// only raw system calls (errno and the rest of the thread's state belong to
// the supervisor's thread, suspended until the exec) and touches no memory
// but its stack and its spawn_req.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spawn.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

// orig_nofile is RLIMIT_NOFILE as the process started, before the Go
// runtime raised its soft limit; children get it back, as Go's forkExec
// gives it back.
static struct rlimit orig_nofile;
static int have_orig_nofile;

__attribute__((constructor)) static void record_nofile(void) {
	have_orig_nofile = getrlimit(RLIMIT_NOFILE, &orig_nofile) == 0;
}

static inline long rsys(long n, long a, long b, long c, long d, long e) {
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}

// batchlet_clone3 is clone3(args, size) whose child calls fn(arg) on the
// stack args gives it (fn never returns; exit 127 if it does). It returns
// the child's pid, or -errno, in the parent.
long batchlet_clone3(struct clone_args *args, size_t size, int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl batchlet_clone3\n"
	".type batchlet_clone3,@function\n"
	"batchlet_clone3:\n"
	"	mov %rdx, %r8\n"
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n" // SYS_clone3
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	xor %ebp, %ebp\n"
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov $127, %edi\n"
	"	mov $231, %eax\n" // SYS_exit_group
	"	syscall\n"
	"	hlt\n"
	"1:	ret\n"
	".size batchlet_clone3, .-batchlet_clone3\n");

// child_fail records the failed step's errno for the parent and exits.
static int child_fail(struct spawn_req *q, long r, int unsupported) {
	q->err = (int)-r;
	q->unsupported = unsupported;
	rsys(SYS_exit_group, 127, 0, 0, 0, 0);
	return 0;
}

static int spawn_child(void *arg) {
	struct spawn_req *q = arg;
	// Nothing before this may touch the shared descriptor table.
	long r = rsys(SYS_close_range, q->keep_below, ~0U, CLOSE_RANGE_UNSHARE, 0, 0);
	if (r < 0)
		return child_fail(q, r, 1);
	// As Go's forkExec: the thread's signal mask back (handlers are
	// default already, CLONE_CLEAR_SIGHAND), a session of its own, the
	// descriptors at 0..n-1, the working directory, the parent-death
	// signal, the original RLIMIT_NOFILE, then the exec.
	if ((r = rsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&q->sigmask, 0, sizeof q->sigmask, 0)) < 0)
		return child_fail(q, r, 0);
	if ((r = rsys(SYS_setsid, 0, 0, 0, 0, 0)) < 0)
		return child_fail(q, r, 0);
	int tmp[SPAWN_FDS];
	for (int i = 0; i < q->nfds; i++) // above every target first: a source may be a target
		if ((tmp[i] = (int)rsys(SYS_fcntl, q->reserved[i], F_DUPFD_CLOEXEC, q->keep_below, 0, 0)) < 0)
			return child_fail(q, tmp[i], 0);
	for (int i = 0; i < q->nfds; i++)
		if ((r = rsys(SYS_dup3, tmp[i], i, 0, 0, 0)) < 0)
			return child_fail(q, r, 0);
	if ((r = rsys(SYS_chdir, (long)q->dir, 0, 0, 0, 0)) < 0)
		return child_fail(q, r, 0);
	if ((r = rsys(SYS_prctl, PR_SET_PDEATHSIG, q->pdeathsig, 0, 0, 0)) < 0)
		return child_fail(q, r, 0);
	if (q->have_nofile)
		rsys(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&q->nofile, 0, 0);
	r = rsys(SYS_execve, (long)q->path, (long)q->argv, (long)q->envp, 0, 0);
	return child_fail(q, r, 0);
}

// park points the reserved slots back at /dev/null: the container's
// descriptors must close with the container (the status pipe's EOF is its
// exec), not stay open in the supervisor.
static void park(struct spawn_req *q) {
	for (int i = 0; i < q->nfds; i++)
		dup3(q->devnull, q->reserved[i], O_CLOEXEC);
}

void *batchlet_spawn_stack(void) {
	void *p = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

long batchlet_spawn(struct spawn_req *q) {
	q->err = 0, q->unsupported = 0;
	q->have_nofile = have_orig_nofile;
	q->nofile = orig_nofile;
	for (int i = 0; i < q->nfds; i++) {
		if (dup3(q->fds[i], q->reserved[i], O_CLOEXEC) < 0) {
			long err = -errno;
			park(q);
			return err;
		}
	}
	uint64_t all = ~0ULL;
	rsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&q->sigmask, sizeof all, 0);
	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_CLEAR_SIGHAND | q->cloneflags;
	if (q->cgroup_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)q->cgroup_fd;
	}
	ca.exit_signal = SIGCHLD;
	ca.stack = (uint64_t)(uintptr_t)q->stack;
	ca.stack_size = SPAWN_STACK;
	long pid = batchlet_clone3(&ca, sizeof ca, spawn_child, q);
	rsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&q->sigmask, 0, sizeof q->sigmask, 0);
	park(q);
	// An unknown flag or clone_args size (before Linux 5.7; EINVAL is
	// also a bad cgroup's, which the caller's fallback then reports).
	if (pid < 0)
		q->unsupported = pid == -ENOSYS || pid == -EINVAL || pid == -E2BIG;
	return pid;
}
