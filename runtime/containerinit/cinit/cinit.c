//go:build cgo && linux

// The C container init: see doc.go. Every step mirrors the Go init's
// (runtime/containerinit: init.go, mounts.go, hide.go, caps.go, user.go,
// creds.go) in the same order, with the same error messages (Go's errno
// texts, os.PathError's "op path: err" forms), so that a container and its
// runtime cannot tell which init started it.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "errtext.h"
#include "trim.h"

extern char **environ;

#define INIT_ARG0 "batchlet-container-init"
#define PLAN_VERSION "cinit1"
#define STATUS_FD 3
#define HOST_TMP "/run/batchlet/hosttmp"

// ---- errors: written to the status descriptor, exit 128, as the Go init.

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
	char buf[16384];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = sizeof buf - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(STATUS_FD, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	_exit(128);
}

// E is Go's text of errno e (syscall.Errno.Error).
static const char *E(int e) { return go_errtext(e); }

// errf formats an error of a step, for its caller to wrap.
static char *errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *errf(const char *fmt, ...) {
	char *out = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&out, fmt, ap) < 0)
		out = "out of memory";
	va_end(ap);
	return out;
}

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (!p)
		fail("container init: out of memory");
	return p;
}

static char *xstrndup(const char *s, size_t n) {
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

// ---- Go's path/filepath on Unix.

// clean is filepath.Clean.
static char *clean(const char *p) {
	size_t n = strlen(p);
	if (n == 0)
		return xstrndup(".", 1);
	int rooted = p[0] == '/';
	char *out = xmalloc(n + 2);
	size_t r = 0, w = 0, dotdot = 0;
	if (rooted) {
		out[w++] = '/';
		r = dotdot = 1;
	}
	while (r < n) {
		if (p[r] == '/') {
			r++;
		} else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
			r++;
		} else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				w--;
				while (w > dotdot && out[w] != '/')
					w--;
			} else if (!rooted) {
				if (w > 0)
					out[w++] = '/';
				out[w++] = '.';
				out[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0))
				out[w++] = '/';
			for (; r < n && p[r] != '/'; r++)
				out[w++] = p[r];
		}
	}
	if (w == 0)
		out[w++] = '.';
	out[w] = 0;
	return out;
}

// join is filepath.Join of two elements.
static char *join(const char *a, const char *b) {
	if (!*a && !*b)
		return xstrndup("", 0);
	if (!*a)
		return clean(b);
	if (!*b)
		return clean(a);
	char *t = errf("%s/%s", a, b);
	char *c = clean(t);
	free(t);
	return c;
}

// dir is filepath.Dir.
static char *dir_of(const char *p) {
	const char *slash = strrchr(p, '/');
	size_t n = slash ? (size_t)(slash - p) + 1 : 0;
	char *t = xstrndup(p, n);
	char *c = clean(t);
	free(t);
	return c;
}

// ---- os functions with their errors.

// mkdir_all is os.MkdirAll; it returns its error's text, or NULL.
static char *mkdir_all(const char *path, mode_t perm) {
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return NULL;
		return errf("mkdir %s: %s", path, E(ENOTDIR));
	}
	long i = (long)strlen(path) - 1;
	while (i >= 0 && path[i] == '/')
		i--;
	while (i >= 0 && path[i] != '/')
		i--;
	if (i < 0)
		i = 0;
	if (i > 0) {
		char *parent = xstrndup(path, i);
		char *err = mkdir_all(parent, perm);
		free(parent);
		if (err)
			return err;
	}
	int r;
	while ((r = mkdir(path, perm)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		int e = errno;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return NULL;
		return errf("mkdir %s: %s", path, E(e));
	}
	return NULL;
}

// ---- the plan (containerinit.CPlan).

struct mnt {
	char *orig, *src, *target;
	int ro;
};

struct plan {
	char *hostname, *qhostname, *workdir, *qworkdir, *qargv0;
	int nnp, has_gid, hosttmp;
	uint64_t caps;
	long long uid, gid;
	int ngroups, nmounts, nhide, nkeep, nargv;
	long long *groups;
	struct mnt *mounts;
	char **hide, **keep, **argv;
};

struct reader {
	const char *p;
	int bad;
};

static char *next_str(struct reader *r) {
	if (r->bad)
		return NULL;
	size_t n = 0;
	const char *p = r->p;
	if (*p < '0' || *p > '9') {
		r->bad = 1;
		return NULL;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > 1 << 30) {
			r->bad = 1;
			return NULL;
		}
	}
	if (*p != ':' || strnlen(p + 1, n) < n) {
		r->bad = 1;
		return NULL;
	}
	r->p = p + 1 + n;
	return xstrndup(p + 1, n);
}

// parse_int is strconv.ParseInt(s, 10, 64): 1 when s is a valid one.
static int parse_int(const char *s, long long *out) {
	int neg = 0;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return 0;
	unsigned long long v = 0, lim = neg ? (1ULL << 63) : (1ULL << 63) - 1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		unsigned d = *s - '0';
		if (v > (lim - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 1;
}

static long long next_int(struct reader *r) {
	char *s = next_str(r);
	long long v = 0;
	if (s && !parse_int(s, &v))
		r->bad = 1;
	free(s);
	return v;
}

static int next_count(struct reader *r) {
	long long n = next_int(r);
	if (n < 0 || n > 1 << 20)
		r->bad = 1;
	return r->bad ? 0 : (int)n;
}

static char **next_strs(struct reader *r, int *n) {
	*n = next_count(r);
	char **out = xmalloc(sizeof(char *) * (*n + 1));
	for (int i = 0; i < *n; i++)
		out[i] = next_str(r);
	out[*n] = NULL;
	return out;
}

// parse_plan reads arg, 0 when it is not a plan this init runs.
static int parse_plan(const char *arg, struct plan *pl) {
	struct reader r = {arg, 0};
	char *v = next_str(&r);
	if (!v || strcmp(v, PLAN_VERSION) != 0)
		return 0;
	pl->hostname = next_str(&r);
	pl->qhostname = next_str(&r);
	pl->workdir = next_str(&r);
	pl->qworkdir = next_str(&r);
	pl->nnp = next_int(&r) != 0;
	char *caps = next_str(&r);
	if (caps) {
		char *end;
		errno = 0;
		pl->caps = strtoull(caps, &end, 10);
		if (errno || *end || !*caps)
			r.bad = 1;
	}
	pl->uid = next_int(&r);
	char *gid = next_str(&r);
	if (gid && *gid) {
		pl->has_gid = 1;
		if (!parse_int(gid, &pl->gid))
			r.bad = 1;
	}
	pl->ngroups = next_count(&r);
	pl->groups = xmalloc(sizeof(long long) * (pl->ngroups + 1));
	for (int i = 0; i < pl->ngroups; i++)
		pl->groups[i] = next_int(&r);
	pl->hosttmp = next_int(&r) != 0;
	pl->nmounts = next_count(&r);
	pl->mounts = xmalloc(sizeof(struct mnt) * (pl->nmounts + 1));
	for (int i = 0; i < pl->nmounts; i++) {
		pl->mounts[i].orig = next_str(&r);
		pl->mounts[i].src = next_str(&r);
		pl->mounts[i].target = next_str(&r);
		pl->mounts[i].ro = next_int(&r) != 0;
	}
	pl->hide = next_strs(&r, &pl->nhide);
	pl->keep = next_strs(&r, &pl->nkeep);
	pl->argv = next_strs(&r, &pl->nargv);
	pl->qargv0 = next_str(&r);
	return !r.bad && *r.p == 0 && pl->nargv > 0;
}

// ---- mounts (mounts.go, hide.go, init.go's mountProc).

// resolve_in is resolveIn: path joined to root, symlinks followed inside
// root. It returns NULL and sets *err on failure.
static char *resolve_in(const char *root, const char *path, char **err) {
	char *t = errf("/%s", path);
	char *rest = clean(t); // components left, '/'-separated
	free(t);
	char *resolved = xstrndup("", 0);
	int links = 0;
	while (*rest) {
		char *slash = strchr(rest, '/');
		char *part = slash ? xstrndup(rest, slash - rest) : xstrndup(rest, strlen(rest));
		char *tail = xstrndup(slash ? slash + 1 : "", slash ? strlen(slash + 1) : 0);
		free(rest);
		rest = tail;
		if (!*part || !strcmp(part, ".")) {
			free(part);
			continue;
		}
		if (!strcmp(part, "..")) {
			char *abs = errf("/%s", resolved);
			char *d = dir_of(abs);
			free(resolved);
			resolved = xstrndup(d + 1, strlen(d + 1));
			free(abs), free(d), free(part);
			continue;
		}
		char *next = join(resolved, part);
		free(part);
		char *full = join(root, next);
		struct stat st;
		if (lstat(full, &st) < 0 || !S_ISLNK(st.st_mode)) {
			free(resolved), free(full);
			resolved = next;
			continue;
		}
		free(next);
		if (++links > 40) {
			*err = errf("too many levels of symbolic links");
			return NULL;
		}
		char to[PATH_MAX + 1];
		ssize_t n = readlink(full, to, PATH_MAX);
		if (n < 0) {
			*err = errf("readlink %s: %s", full, E(errno));
			return NULL;
		}
		to[n] = 0;
		free(full);
		if (to[0] == '/') {
			free(resolved);
			resolved = xstrndup("", 0);
		}
		char *joined = *rest ? errf("%s/%s", to, rest) : xstrndup(to, n);
		free(rest);
		rest = joined;
	}
	return join(root, resolved);
}

// mount_point_in is mountPointIn.
static char *mount_point_in(const char *root, const char *path, int dir) {
	char *err = NULL;
	char *target = resolve_in(root, path, &err);
	if (!target)
		fail("mount point %s: %s", path, err);
	struct stat st;
	if (stat(target, &st) == 0) {
		if (!S_ISDIR(st.st_mode) && dir)
			fail("mount point %s: not a directory", path);
		return target;
	}
	if (dir) {
		if ((err = mkdir_all(target, 0755)))
			fail("create mount point %s: %s", path, err);
		return target;
	}
	char *parent = dir_of(target);
	if ((err = mkdir_all(parent, 0755)))
		fail("create mount point %s: %s", path, err);
	int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		fail("create mount point %s: open %s: %s", path, target, E(errno));
	close(fd);
	return target;
}

static void bind_mount(const char *src, const char *target, int ro) {
	if (mount(src, target, "", MS_BIND, NULL) < 0)
		fail("bind mount %s on %s: %s", src, target, E(errno));
	if (ro && mount("", target, "", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		fail("remount %s read-only: %s", target, E(errno));
}

static const struct {
	const char *name;
	unsigned major, minor;
} dev_nodes[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

// bind_host_dev is bindHostDev; it returns its error's text, or NULL.
static char *bind_host_dev(int host_dev, const char *name, const char *target) {
	int fd = openat(host_dev, name, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errf("%s", E(errno));
	int f = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
	if (f < 0) {
		char *err = errf("open %s: %s", target, E(errno));
		close(fd);
		return err;
	}
	close(f);
	char src[64];
	snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
	char *err = mount(src, target, "", MS_BIND, NULL) < 0 ? errf("%s", E(errno)) : NULL;
	close(fd);
	return err;
}

static void mount_dev(const char *root) {
	int host_dev = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host_dev < 0)
		fail("open /dev: %s", E(errno));
	char *dev = mount_point_in(root, "/dev", 1);
	if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0)
		fail("mount /dev: %s", E(errno));
	mode_t old = umask(0);
	for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
		char *target = join(dev, dev_nodes[i].name);
		char *err = NULL;
		if (mknod(target, S_IFCHR | 0666, makedev(dev_nodes[i].major, dev_nodes[i].minor)) < 0)
			err = bind_host_dev(host_dev, dev_nodes[i].name, target);
		if (err)
			fail("create /dev/%s: %s", dev_nodes[i].name, err);
		free(target);
	}
	umask(old);
	static const char *links[][2] = {{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
					 {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}, {"core", "/proc/kcore"}};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		char *target = join(dev, links[i][0]);
		if (symlink(links[i][1], target) < 0)
			fail("create /dev/%s: symlink %s %s: %s", links[i][0], links[i][1], target, E(errno));
		free(target);
	}
	static const char *dirs[] = {"pts", "shm"};
	for (size_t i = 0; i < 2; i++) {
		char *target = join(dev, dirs[i]);
		if (mkdir(target, 0755) < 0)
			fail("create /dev/%s: mkdir %s: %s", dirs[i], target, E(errno));
		free(target);
	}
	char *pts = join(dev, "pts"), *shm = join(dev, "shm");
	if (mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
		fail("mount /dev/pts: %s", E(errno));
	if (mount("shm", shm, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k") < 0)
		fail("mount /dev/shm: %s", E(errno));
	close(host_dev);
}

static void mount_sys(const char *root) {
	char *sys = mount_point_in(root, "/sys", 1);
	unsigned long flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (mount("sysfs", sys, "sysfs", flags, NULL) == 0) {
		char *fs = join(sys, "fs"), *cg = join(fs, "cgroup");
		(void)mount("cgroup2", cg, "cgroup2", flags, NULL);
		return;
	}
	if (mount("/sys", sys, "", MS_BIND | MS_REC, NULL) < 0)
		fail("mount /sys: %s", E(errno));
	if (mount("", sys, "", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		fail("make /sys read-only: %s", E(errno));
}

static void bind_mounts(const char *root, const struct plan *pl) {
	if (pl->hosttmp)
		bind_mount("/tmp", HOST_TMP, 0);
	for (int i = 0; i < pl->nmounts; i++) {
		const struct mnt *m = &pl->mounts[i];
		struct stat st;
		if (stat(m->src, &st) < 0)
			fail("mount %s: stat %s: %s", m->orig, m->src, E(errno));
		char *target = mount_point_in(root, m->target, S_ISDIR(st.st_mode));
		bind_mount(m->src, target, m->ro);
		free(target);
	}
}

static void hide(const char *path, char **keep, int nkeep) {
	struct stat st;
	if (stat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		bind_mount("/dev/null", path, 1);
		return;
	}
	int *fds = xmalloc(sizeof(int) * (nkeep + 1));
	const char **kept = xmalloc(sizeof(char *) * (nkeep + 1));
	int n = 0;
	size_t plen = strlen(path);
	for (int i = 0; i < nkeep; i++) {
		if (strncmp(keep[i], path, plen) != 0 || keep[i][plen] != '/')
			continue;
		int fd = open(keep[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			fail("keep %s visible: %s", keep[i], E(errno));
		fds[n] = fd, kept[n++] = keep[i];
	}
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k") < 0)
		fail("hide %s: %s", path, E(errno));
	for (int i = 0; i < n; i++) {
		char *err = mkdir_all(kept[i], 0755);
		if (err)
			fail("keep %s visible: %s", kept[i], err);
		char src[64];
		snprintf(src, sizeof src, "/proc/self/fd/%d", fds[i]);
		if (mount(src, kept[i], "", MS_BIND, NULL) < 0)
			fail("keep %s visible: %s", kept[i], E(errno));
	}
	if (mount("", path, "", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("hide %s: make it read-only: %s", path, E(errno));
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds), free(kept);
}

static void mount_proc(const char *proc) {
	if (mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("mount /proc: %s", E(errno));
	static const char *ro[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};
	for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++) {
		char *target = join(proc, ro[i]);
		if (mount(target, target, "", MS_BIND | MS_REC, NULL) == 0 &&
		    mount("", target, "", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			fail("make /proc/%s read-only: %s", ro[i], E(errno));
		free(target);
	}
	static const char *masked[] = {"kcore", "keys", "timer_list"};
	for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
		char *target = join(proc, masked[i]);
		struct stat st;
		if (stat(target, &st) == 0 && mount("/dev/null", target, "", MS_BIND, NULL) < 0)
			fail("mask /proc/%s: %s", masked[i], E(errno));
		free(target);
	}
}

// set_up_mounts is setUpMounts for a host container (root "/").
static void set_up_mounts(const struct plan *pl) {
	if (mount("", "/", "", MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make / private: %s", E(errno));
	if (sethostname(pl->hostname, strlen(pl->hostname)) < 0)
		fail("set hostname %s: %s", pl->qhostname, E(errno));
	mount_dev("/");
	mount_sys("/");
	bind_mounts("/", pl);
	for (int i = 0; i < pl->nhide; i++)
		hide(pl->hide[i], pl->keep, pl->nkeep);
	char *proc = mount_point_in("/", "/proc", 1);
	mount_proc(proc);
}

// ---- the user (user.go).

struct entries {
	int n;
	char ***fields; // NULL-terminated field lists
	int *nfields;
};

// read_colon_file is readColonFile; 0 when the file cannot be read.
static int read_colon_file(const char *path, struct entries *out) {
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (!buf)
				fail("container init: out of memory");
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return 0;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	int max = 1;
	for (size_t i = 0; i < len; i++)
		max += buf[i] == '\n';
	out->fields = xmalloc(sizeof(char **) * max);
	out->nfields = xmalloc(sizeof(int) * max);
	for (char *line = buf; line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *s = line, *e = line + strlen(line);
		line = nl ? nl + 1 : NULL;
		trim_space(&s, &e);
		*e = 0;
		if (!*s || *s == '#')
			continue;
		int nf = 1;
		for (char *c = s; *c; c++)
			nf += *c == ':';
		char **f = xmalloc(sizeof(char *) * (nf + 1));
		int k = 0;
		f[k++] = s;
		for (char *c = s; *c; c++)
			if (*c == ':')
				*c = 0, f[k++] = c + 1;
		f[k] = NULL;
		out->fields[out->n] = f;
		out->nfields[out->n++] = nf;
	}
	return 1;
}

struct ids {
	long long uid, gid;
	long long *groups;
	int ngroups;
	const char *home;
};

// resolve_user is resolveUser for a container without an image user.
static void resolve_user(const struct plan *pl, struct ids *out) {
	out->uid = pl->uid;
	out->home = "";
	const char *name = "";
	long long gid = 0;
	struct entries pw, gr;
	if (read_colon_file("/etc/passwd", &pw)) {
		char uid[32];
		snprintf(uid, sizeof uid, "%lld", out->uid);
		for (int i = 0; i < pw.n; i++) {
			if (pw.nfields[i] > 3 && !strcmp(pw.fields[i][2], uid)) {
				if (pw.nfields[i] >= 6) {
					name = pw.fields[i][0], out->home = pw.fields[i][5];
					if (!parse_int(pw.fields[i][3], &gid))
						gid = 0;
				}
				break;
			}
		}
	}
	read_colon_file("/etc/group", &gr);
	if (pl->has_gid)
		gid = pl->gid;
	out->gid = gid;
	int max = 1 + pl->ngroups;
	for (int i = 0; i < gr.n; i++)
		if (gr.nfields[i] >= 4)
			for (char *c = gr.fields[i][3]; *c; c++)
				max += *c == ',';
	max += gr.n;
	out->groups = xmalloc(sizeof(long long) * max);
	out->ngroups = 0;
	out->groups[out->ngroups++] = gid;
	if (*name) {
		for (int i = 0; i < gr.n; i++) {
			if (gr.nfields[i] < 4)
				continue;
			long long g;
			const char *m = gr.fields[i][3];
			for (;;) {
				const char *comma = strchr(m, ',');
				size_t n = comma ? (size_t)(comma - m) : strlen(m);
				if (n == strlen(name) && !strncmp(m, name, n) && parse_int(gr.fields[i][2], &g))
					out->groups[out->ngroups++] = g;
				if (!comma)
					break;
				m = comma + 1;
			}
		}
	}
	for (int i = 0; i < pl->ngroups; i++)
		out->groups[out->ngroups++] = pl->groups[i];
}

// ---- the environment (os.Environ, shim.PodEnv, lookupEnv).

static size_t key_len(const char *kv) {
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static int in_list(const char *kv, const char *list) {
	size_t k = key_len(kv);
	for (const char *p = list;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == k && !strncmp(p, kv, k))
			return 1;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

// pod_env is os.Environ() (first of each name, no empty entries) less the
// variables added names (shim.PodEnv), with room for one more.
static char **pod_env(const char *added, int *count) {
	int n = 0;
	while (environ[n])
		n++;
	char **out = xmalloc(sizeof(char *) * (n + 2));
	int k = 0;
	for (int i = 0; i < n; i++) {
		const char *kv = environ[i];
		if (!*kv)
			continue;
		int dup = 0;
		if (strchr(kv, '=')) {
			size_t kl = key_len(kv);
			for (int j = 0; j < i && !dup; j++)
				dup = strchr(environ[j], '=') && key_len(environ[j]) == kl && !strncmp(environ[j], kv, kl + 1);
		}
		if (dup || (*added && in_list(kv, added)))
			continue;
		out[k++] = (char *)kv;
	}
	out[k] = NULL;
	*count = k;
	return out;
}

static const char *lookup_env(char **env, const char *key) {
	const char *v = "";
	size_t kl = strlen(key);
	for (; *env; env++)
		if (!strncmp(*env, key, kl) && (*env)[kl] == '=')
			v = *env + kl + 1;
	return v;
}

// ---- the command (lookPath).

static char *look_path(const char *file, const char *path, const char *workdir, const char **err) {
	struct stat st;
	if (strchr(file, '/')) {
		char *f = file[0] == '/' ? xstrndup(file, strlen(file)) : join(workdir, file);
		if (stat(f, &st) < 0) {
			*err = "no such file or directory";
			return NULL;
		}
		if (S_ISDIR(st.st_mode) || !(st.st_mode & 0111)) {
			*err = "permission denied";
			return NULL;
		}
		return f;
	}
	if (!*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		char *d = xstrndup(p, colon ? (size_t)(colon - p) : strlen(p));
		char *cand = join(d, file);
		free(d);
		if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode) && (st.st_mode & 0111))
			return cand;
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	*err = "executable file not found in $PATH";
	return NULL;
}

// ---- capabilities and credentials (caps.go limitCaps, creds.go).

static void limit_caps(uint64_t keep) {
	for (int n = 0; n < 64; n++) {
		if (keep & (1ULL << n))
			continue;
		if (prctl(PR_CAPBSET_DROP, n, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			fail("drop capability %d: %s", n, E(errno));
		}
	}
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) < 0)
		fail("capget: %s", E(errno));
	data[0].inheritable = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		fail("capset: %s", E(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail("clear ambient capabilities: %s", E(errno));
}

// The system calls that take 32-bit ids (creds_ids16.go, creds_ids32.go).
#if defined(__i386__) || defined(__arm__)
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#endif

static void apply_ids(const struct ids *ids) {
	uint32_t *gids = xmalloc(sizeof(uint32_t) * (ids->ngroups + 1));
	for (int i = 0; i < ids->ngroups; i++)
		gids[i] = (uint32_t)ids->groups[i];
	if (syscall(SYS_SETGROUPS, (unsigned long)ids->ngroups, ids->ngroups ? gids : NULL) < 0)
		fail("setgroups: %s", E(errno));
	unsigned long gid = (unsigned long)ids->gid, uid = (unsigned long)ids->uid;
	if (syscall(SYS_SETRESGID, gid, gid, gid) < 0)
		fail("setgid %lld: %s", ids->gid, E(errno));
	if (syscall(SYS_SETRESUID, uid, uid, uid) < 0)
		fail("setuid %lld: %s", ids->uid, E(errno));
}

// run is init.go's run for a host container; it never returns.
static void run(const struct plan *pl, const char *added) {
	fcntl(STATUS_FD, F_SETFD, FD_CLOEXEC);
	set_up_mounts(pl);
	struct ids ids;
	resolve_user(pl, &ids);
	int n;
	char **env = pod_env(added, &n);
	if (!*lookup_env(env, "HOME") && *ids.home) {
		env[n++] = errf("HOME=%s", ids.home);
		env[n] = NULL;
	}
	char *err = mkdir_all(pl->workdir, 0755);
	if (err)
		fail("create working directory %s: %s", pl->workdir, err);
	const char *why = NULL;
	char *path = look_path(pl->argv[0], lookup_env(env, "PATH"), pl->workdir, &why);
	if (!path)
		fail("exec: %s: %s", pl->qargv0, why);
	limit_caps(pl->caps);
	if (pl->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("set no_new_privs: %s", E(errno));
	apply_ids(&ids);
	if (chdir(pl->workdir) < 0)
		fail("chdir to cwd (%s) set in config.json failed: chdir %s: %s", pl->qworkdir, pl->workdir, E(errno));
	execve(path, pl->argv, env);
	fail("exec: %s: %s", pl->qargv0, E(errno));
}

// batchlet_cinit runs before the Go runtime starts (glibc passes
// constructors main's arguments). It returns, leaving the process to Go,
// unless argv is a container init's with a plan it runs:
// [Arg0, spec, plan, added] (containerinit.CPlan, shim.InitStart).
__attribute__((constructor)) static void batchlet_cinit(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc != 4 || strcmp(argv[0], INIT_ARG0) != 0)
		return;
	struct plan pl;
	memset(&pl, 0, sizeof pl);
	if (!parse_plan(argv[2], &pl))
		return;
	run(&pl, argv[3]);
}
