// The supervisor's start of a container init (spawn.c, spawn.go).
#include <stdint.h>
#include <sys/resource.h>

#define SPAWN_FDS 4
#define SPAWN_STACK (64 * 1024)

struct spawn_req {
	// In: the exec, the descriptors for 0..nfds-1, the reserved slots
	// (below keep_below) they pass through, /dev/null to park the slots
	// on after, the namespaces, the cgroup (-1: the supervisor's), the
	// working directory, the parent-death signal and the child's stack.
	char *path;
	char **argv, **envp;
	int nfds;
	int fds[SPAWN_FDS];
	int reserved[SPAWN_FDS];
	int keep_below, devnull;
	uint64_t cloneflags;
	int cgroup_fd;
	char *dir;
	int pdeathsig;
	void *stack;
	// Out: the errno of the step that failed (the child exited, or the
	// clone failed), and whether it is one this kernel lacks (the caller
	// then starts the init as before).
	int err, unsupported;
	// The child's.
	uint64_t sigmask;
	int have_nofile;
	struct rlimit nofile;
};

void *batchlet_spawn_stack(void);
long batchlet_spawn(struct spawn_req *q);
