// Package process runs pods as host processes with kubelet semantics.
//
// Each pod gets a directory under the runtime's root dir (volumes, a private
// /tmp, /etc/hosts, logs). Every container attempt is owned by a shim
// (runtime/shim; started in shimref.go): the agent's own binary
// re-executed in a session of its own,
// without a parent-death signal, so that containers outlive the agent. The
// shim starts the container, writes its output to the CRI log file, waits
// for it and records its end in the attempt's state file; a restarted
// agent adopts live shims and reports recorded ends (adopt.go,
// runtime.Adopter). When the agent runs as root and Linux namespaces work
// (probed once at start-up), every container is PID 1 of its own PID
// namespace, in mount and UTS namespaces of its own: a goroutine of the
// shim locked to a new OS thread unshares mount and UTS namespaces (with
// CLONE_FS, which lets one thread of many do so), makes / private, sets the
// pod's hostname, mounts a /dev of its own and a read-only /sys,
// bind-mounts the pod's /etc/hosts, its private /tmp and the container's
// volumeMounts at their mountPath (missing mount points are created;
// readOnly remounts read-only), hides the data dir and the host's /tmp
// under read-only tmpfs mounts (security.go, Config.HidePaths), then
// clones the container init (runtime/containerinit, through
// /proc/self/exe) from that thread with CLONE_NEWPID, its own session, its
// cgroup and SIGKILL as parent-death signal, and waits for it; the init
// mounts the PID namespace's /proc, keeps the default capabilities, takes
// the securityContext's user and groups and execs the command. The thread is never unlocked, so
// Go ends it with the goroutine instead of reusing a thread in foreign
// namespaces, and the parent-death signal (sent when that thread ends) only
// fires when the shim dies. exec joins a running container's namespaces
// with /usr/bin/nsenter. Without namespaces containers are plain process
// groups and one log line says so.
//
// Stopping sends SIGTERM to the container's process group, then SIGKILL
// (which ends every process of its PID namespace) after the grace period.
// The kernel drops a SIGTERM that PID 1 has no handler for; there the
// runtime sends SIGKILL at once and reports exit code 143, so a container
// stops as it would if it were not init.
//
// The container image is recorded, never pulled: the command runs with the
// host's programs — unless the image runtime is configured (Config.Images)
// and the pod runs from its image (image.go, imagens.go): then the image is
// pulled through runtime/image, the container's root is the image
// (overlayfs or a copy), built by runtime/containerinit, which the shim
// (or, with Config.NoShims, the agent) starts as PID 1 of the container's
// namespaces and which execs the command inside it; like host commands,
// these containers outlive the agent unless Config.NoShims. A container
// without a command cannot start (StartError).
// Without a workingDir a container runs in its pod's scratch directory.
// Memory and cpu limits are applied with cgroup v2 when it is writable.
// A container whose spec asks for stdin reads a pipe that attach feeds
// (closed after the first attach with stdinOnce); others read /dev/null.
package process
