// Package containerinit starts every namespaced container, host command
// or image: the runtime (the agent itself, or the container's shim) starts
// the agent's own binary as PID 1 of the container's new PID, mount and UTS
// namespaces, with argv[0] Arg0, the Spec as argv[1] and, as argv[2], the
// names of the variables its starter added to the environment for the Go
// runtime's start (shim.InitStart; removed before the exec); this package's
// init function recognises that before any other package of the binary
// initialises (it imports nothing heavy, so Go runs it early), builds the
// container's view of the files there (see setUpMounts: the image's root or
// the host's, a private /dev, a read-only /sys, the bind mounts, a fresh
// /proc with runc's masks, the agent's files hidden), pivot_roots into an
// image's root, narrows the capabilities to the container's set, takes the
// container's user and groups, and execs the command, which becomes PID 1.
// Because the init makes the container's mounts itself, whatever starts it
// needs no mount code: a shim starts every container the same way.
//
// Before the exec, errors go to file descriptor 3 (the status pipe, closed
// on exec): the runtime reads it to tell a command that could not start
// (StartError) from one that ran.
//
// With argv[0] ExecArg0 the same binary runs kubectl exec's command in a
// running container instead (exec.go): it joins the container's
// namespaces and takes its user and capabilities as the init does.
package containerinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/batchlet/batchlet/runtime/shim"
	"golang.org/x/sys/unix"
)

// Arg0 is argv[0] of a container init.
const Arg0 = "batchlet-container-init"

// StatusFD is the descriptor errors before the exec are written to.
const StatusFD = 3

// Spec is what the init needs; it travels as JSON in argv[1]. The
// environment is the container's.
type Spec struct {
	// Rootfs is where an image container's root is mounted (Dir/merged),
	// seen from the host; empty for a host container, whose root stays the
	// host's as its mount namespace shows it.
	Rootfs string `json:"rootfs,omitempty"`
	// Dir holds the attempt's overlay upper/ and work/ directories.
	Dir string `json:"dir,omitempty"`
	// Lower are the image's unpacked layers, bottom first.
	Lower []string `json:"lower,omitempty"`
	// Copied: the runtime copied the layers into Rootfs (no overlayfs).
	Copied   bool   `json:"copied,omitempty"`
	Hostname string `json:"hostname"`
	// Mounts are bound into the root in order (the pod's /etc/hosts, a
	// host container's private /tmp, the volumes).
	Mounts []Mount `json:"mounts,omitempty"`
	// Hide are host paths a host container must not see (the agent's data
	// dir, its credentials): each is covered with an empty read-only
	// tmpfs, or /dev/null for a file. The host's /tmp (at HostTmp) always
	// is. Keep are directories under them that stay visible at their
	// paths (the container's default working directory).
	Hide []string `json:"hide,omitempty"`
	Keep []string `json:"keep,omitempty"`

	Argv    []string `json:"argv"`
	WorkDir string   `json:"workDir"`
	// User is the image's user: "uid", "uid:gid", "name" or "name:group".
	User string `json:"user,omitempty"`
	// RunAsUser and RunAsGroup override it (securityContext).
	RunAsUser  *int64 `json:"runAsUser,omitempty"`
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// Groups are supplementary groups besides the user's own.
	Groups []int64 `json:"groups,omitempty"`
	// Privileged keeps every capability; otherwise the container gets
	// DefaultCaps with CapAdd added and CapDrop removed.
	Privileged bool     `json:"privileged,omitempty"`
	CapAdd     []string `json:"capAdd,omitempty"`
	CapDrop    []string `json:"capDrop,omitempty"`
	// NoNewPrivs: allowPrivilegeEscalation false (setuid programs and file
	// capabilities give the command nothing).
	NoNewPrivs bool `json:"noNewPrivs,omitempty"`

	// Exec mode (ExecArg0) only: Pid is the host PID of the container's
	// PID 1, whose namespaces the command joins; CgroupDir the
	// container's cgroup (empty: the runtime's); TTY makes the command's
	// stdin its controlling terminal.
	Pid       int    `json:"pid,omitempty"`
	CgroupDir string `json:"cgroupDir,omitempty"`
	TTY       bool   `json:"tty,omitempty"`
}

func init() {
	isExec := len(os.Args) == 2 && os.Args[0] == ExecArg0
	// An init's argv may hold the C init's plan (CPlan) and end with the
	// names of the variables its starter added for the Go runtime's start
	// (shim.InitStart).
	isInit := len(os.Args) >= 2 && len(os.Args) <= 4 && os.Args[0] == Arg0
	if !isExec && !isInit {
		return
	}
	status := os.NewFile(StatusFD, "status")
	var err error
	if isExec {
		var code int
		if code, err = runExec(os.Args[1], status); err == nil {
			os.Exit(code)
		}
	} else {
		err = run(os.Args[1], initAdded(os.Args))
	}
	fmt.Fprint(status, err.Error())
	os.Exit(128)
}

// run sets the container up and execs its command; it returns only on
// failure. added names the variables of the environment that are not the
// pod's (shim.InitStart).
func run(arg string, added []string) error {
	unix.CloseOnExec(StatusFD)
	var spec Spec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("container init: %w", err)
	}
	if err := setUpMounts(spec); err != nil {
		return err
	}
	keep, err := capSet(spec)
	if err != nil {
		return err
	}
	ids, err := resolveUser(spec)
	if err != nil {
		return err
	}
	env := os.Environ()
	if len(added) == 1 {
		env = shim.PodEnv(env, added[0])
	}
	if lookupEnv(env, "HOME") == "" && ids.home != "" {
		env = append(env, "HOME="+ids.home)
	}
	if err := os.MkdirAll(spec.WorkDir, 0o755); err != nil {
		return fmt.Errorf("create working directory %s: %w", spec.WorkDir, err)
	}
	if len(spec.Argv) == 0 {
		return errors.New("no command specified")
	}
	path, err := lookPath(spec.Argv[0], lookupEnv(env, "PATH"), spec.WorkDir)
	if err != nil {
		return fmt.Errorf("exec: %q: %w", spec.Argv[0], err)
	}
	if err := limitCaps(keep); err != nil {
		return err
	}
	if spec.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	if err := ids.apply(); err != nil {
		return err
	}
	if err := os.Chdir(spec.WorkDir); err != nil {
		return fmt.Errorf("chdir to cwd (%q) set in config.json failed: %w", spec.WorkDir, err)
	}
	err = unix.Exec(path, spec.Argv, env)
	return fmt.Errorf("exec: %q: %w", spec.Argv[0], err)
}

// enterRootfs makes rootfs the root, detaching the host's.
func enterRootfs(rootfs string) error {
	if err := unix.Chdir(rootfs); err != nil {
		return fmt.Errorf("enter rootfs: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves the new root alone.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return unix.Chdir("/")
}

// mountProc mounts a proc file system at proc for this process's PID
// namespace (the kernel takes the mounting process's), so the container
// sees its own processes and none of the host's, then makes the host-wide
// knobs under it read-only and hides the kernel's memory and keyrings, as
// runc's default masked and read-only paths do.
func mountProc(proc string) error {
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, p := range []string{"bus", "fs", "irq", "sys", "sysrq-trigger"} {
		target := filepath.Join(proc, p)
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			continue // absent on this kernel
		}
		if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make /proc/%s read-only: %w", p, err)
		}
	}
	for _, p := range []string{"kcore", "keys", "timer_list"} {
		target := filepath.Join(proc, p)
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := unix.Mount("/dev/null", target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask /proc/%s: %w", p, err)
		}
	}
	return nil
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// lookPath finds file as execvp would, with the container's PATH.
func lookPath(file, path, workDir string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(workDir, file)
		}
		st, err := os.Stat(file)
		if err != nil {
			return "", errors.New("no such file or directory")
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", errors.New("permission denied")
		}
		return file, nil
	}
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	for _, dir := range filepath.SplitList(path) {
		cand := filepath.Join(dir, file)
		if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", errors.New("executable file not found in $PATH")
}
