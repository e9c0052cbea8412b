// Package containerinit starts a container inside its image's root
// filesystem: the image runtime (the agent itself, or the container's shim)
// starts the agent's own binary as PID 1 of the container's new PID, mount
// and UTS namespaces, with argv[0] Arg0 and the Spec as argv[1]; this
// package's init function recognises that before any other package of the
// binary initialises (it imports nothing heavy, so Go runs it early),
// builds the container's root there (overlay of the image's layers, /dev,
// /sys, bind mounts), mounts its /proc, pivot_roots into it, takes the
// container's user and groups, and execs the command, which becomes PID 1.
// Because the init builds the root itself, whatever starts it needs no
// mount code: a shim starts image containers as it starts any command.
//
// Before the exec, errors go to file descriptor 3 (the status pipe, closed
// on exec): the runtime reads it to tell a command that could not start
// (StartError) from one that ran.
package containerinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Arg0 is argv[0] of a container init.
const Arg0 = "batchlet-container-init"

// StatusFD is the descriptor errors before the exec are written to.
const StatusFD = 3

// Spec is what the init needs; it travels as JSON in argv[1]. The
// environment is the container's.
type Spec struct {
	// Rootfs is where the container's root is mounted (Dir/merged), seen
	// from the host.
	Rootfs string `json:"rootfs"`
	// Dir holds the attempt's overlay upper/ and work/ directories.
	Dir string `json:"dir"`
	// Lower are the image's unpacked layers, bottom first.
	Lower []string `json:"lower,omitempty"`
	// Copied: the runtime copied the layers into Rootfs (no overlayfs).
	Copied   bool    `json:"copied,omitempty"`
	Hostname string  `json:"hostname"`
	Mounts   []Mount `json:"mounts,omitempty"`

	Argv    []string `json:"argv"`
	WorkDir string   `json:"workDir"`
	// User is the image's user: "uid", "uid:gid", "name" or "name:group".
	User string `json:"user,omitempty"`
	// RunAsUser and RunAsGroup override it (securityContext).
	RunAsUser  *int64 `json:"runAsUser,omitempty"`
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// Groups are supplementary groups besides the user's own.
	Groups []int64 `json:"groups,omitempty"`
}

func init() {
	if len(os.Args) != 2 || os.Args[0] != Arg0 {
		return
	}
	status := os.NewFile(StatusFD, "status")
	err := run(os.Args[1])
	fmt.Fprint(status, err.Error())
	os.Exit(128)
}

// run sets the container up and execs its command; it returns only on
// failure.
func run(arg string) error {
	unix.CloseOnExec(StatusFD)
	var spec Spec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("container init: %w", err)
	}
	if err := buildRootfs(spec); err != nil {
		return err
	}
	if err := enterRootfs(spec.Rootfs); err != nil {
		return err
	}
	ids, err := resolveUser(spec)
	if err != nil {
		return err
	}
	env := os.Environ()
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
	if err := syscall.Setgroups(intsOf(ids.groups)); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(int(ids.gid)); err != nil {
		return fmt.Errorf("setgid %d: %w", ids.gid, err)
	}
	if err := syscall.Setuid(int(ids.uid)); err != nil {
		return fmt.Errorf("setuid %d: %w", ids.uid, err)
	}
	if err := os.Chdir(spec.WorkDir); err != nil {
		return fmt.Errorf("chdir to cwd (%q) set in config.json failed: %w", spec.WorkDir, err)
	}
	err = unix.Exec(path, spec.Argv, env)
	return fmt.Errorf("exec: %q: %w", spec.Argv[0], err)
}

// enterRootfs mounts the container's /proc (this process is PID 1 of the
// new PID namespace, whose view /proc takes) and makes rootfs the root,
// detaching the host's.
func enterRootfs(rootfs string) error {
	proc := filepath.Join(rootfs, "proc")
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
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

func intsOf(in []int64) []int {
	out := make([]int, len(in))
	for i, v := range in {
		out[i] = int(v)
	}
	return out
}
