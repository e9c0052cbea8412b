// Package process runs pods as host processes with kubelet semantics.
//
// Each pod gets a directory under the runtime's root dir (volumes, a private
// /tmp, /etc/hosts, logs). When the agent runs as root and Linux namespaces
// work (probed once at start-up), each pod gets its own mount, UTS and PID
// namespaces, held by a small sandbox process; every container joins them
// through /usr/bin/nsenter and gets its own mount namespace on top, where its
// volumeMounts are bind-mounted at their mountPath (missing mount points are
// created on the host file system). Otherwise containers are plain process
// groups and one log line says so.
//
// The container image is recorded, never pulled: the command runs with the
// host's programs. A container without a command cannot start (StartError).
// Without a workingDir a container runs in its pod's scratch directory.
// Memory and cpu limits are applied with cgroup v2 when it is writable.
// A container whose spec asks for stdin reads a pipe that attach feeds
// (closed after the first attach with stdinOnce); others read /dev/null.
package process
