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
// (probed once at start-up), every container, a host command or an
// image's program, starts the same way (initspec.go): the shim (or, with
// Config.NoShims, the agent) clones the container init
// (runtime/containerinit, through /proc/self/exe; shim.StartInit) from a
// goroutine locked to a new OS thread, as PID 1 of new PID, mount and UTS
// namespaces, in its own session and cgroup with SIGKILL as parent-death
// signal, and waits for it. The init makes the container's mounts itself:
// / private, the pod's hostname, a /dev of its own, a read-only /sys, the
// pod's /etc/hosts, a host command's private /tmp and the volumeMounts at
// their mountPath, for a host command the data dir and the host's /tmp
// hidden under read-only tmpfs mounts (security.go, Config.HidePaths), and
// a fresh /proc with runc's masks; it then keeps the default capabilities,
// takes the securityContext's user and groups and execs the command. The
// thread is never unlocked, so Go ends it with the goroutine, and the
// parent-death signal (sent when that thread ends) only fires when the
// shim dies. exec starts the container init in exec mode
// (containerinit.ExecArg0), which joins a running container's namespaces
// and cgroup and runs the command as the container's (its user, groups,
// capabilities, no_new_privs). Without namespaces containers are plain process groups
// and one log line says so.
//
// Stopping sends SIGTERM to the container's process group, then SIGKILL
// (which ends every process of its PID namespace) after the grace period.
// The kernel drops a SIGTERM that PID 1 has no handler for; there the
// runtime sends SIGKILL at once and reports exit code 143, so a container
// stops as it would if it were not init.
//
// The container image is recorded, never pulled: the command runs with the
// host's programs — unless the image runtime is configured (Config.Images)
// and the pod runs from its image (image.go, initspec.go): then the image
// is pulled through runtime/image and the container init builds the
// container's root from it (overlayfs or a copy) and pivot_roots into it
// before the exec; like host commands, these containers outlive the agent
// unless Config.NoShims. A container
// without a command cannot start (StartError).
// Without a workingDir a container runs in its pod's scratch directory.
// Memory and cpu limits are applied with cgroup v2 when it is writable.
// A container whose spec asks for stdin reads a pipe that attach feeds
// (closed after the first attach with stdinOnce); others read /dev/null.
package process
