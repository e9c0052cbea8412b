package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsenterBin joins a running container's namespaces for exec.
const nsenterBin = "/usr/bin/nsenter"

// hostTmp is where the host's /tmp stays visible inside a container's
// mount namespace once /tmp is private.
const hostTmp = "/run/batchlet/hosttmp"

// inPod maps a host path to where it is seen inside a pod's mount
// namespace (the host's /tmp moves to hostTmp).
func inPod(path string) string {
	if path == "/tmp" {
		return hostTmp
	}
	if strings.HasPrefix(path, "/tmp/") {
		return hostTmp + path[len("/tmp"):]
	}
	return path
}

// mount is a bind mount of a container.
type mount struct {
	source, target string
	readOnly       bool
}

// containerNS describes the namespaces a container starts in: its pod's
// hostname, /etc/hosts and private /tmp (host paths), and its volumes.
type containerNS struct {
	hostname  string
	hostsFile string
	tmpDir    string
	mounts    []mount
}

// startNamespaced starts cmd as PID 1 of a new PID namespace, in new mount
// and UTS namespaces set up as ns says, with no helper process: a thread of
// its own unshares and mounts, then clones the container, which inherits
// that thread's namespaces. resolve, when set, runs on that thread before
// the start (to look the command up where the container sees its files).
// onStart, when set, runs on that thread right after the start, before
// the container can be reaped. That thread then waits for the container
// and closes exited.
func startNamespaced(cmd *exec.Cmd, ns containerNS, resolve func() error, onStart func(), exited chan<- struct{}) error {
	started := make(chan error, 1)
	onThreadOfItsOwn(func() {
		if err := enterContainerNS(ns); err != nil {
			started <- err
			return
		}
		if resolve != nil {
			if err := resolve(); err != nil {
				started <- err
				return
			}
		}
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
		cmd.SysProcAttr.Setsid = true
		// The kernel sends it when the creating thread ends: only once the
		// container has been waited for, or when the agent dies.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		if onStart != nil {
			onStart()
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	})
	return <-started
}

// onThreadOfItsOwn runs fn in a new goroutine locked to an OS thread that
// ends with it. fn may change that thread's namespaces: the thread must not
// go back to Go's pool, so it is never unlocked (Go then ends it). Go
// cannot end the main thread, whose namespaces /proc/self also shows, so fn
// never runs there.
func onThreadOfItsOwn(fn func()) {
	go func() {
		goruntime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn()
			return
		}
		// Holding the main thread keeps the new goroutine off it.
		locked := make(chan struct{})
		go func() {
			goruntime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		goruntime.UnlockOSThread()
	}()
}

// enterContainerNS moves the calling thread (locked to its goroutine) into
// new mount and UTS namespaces and makes the container's mounts there.
// CLONE_FS gives the thread its own root and working directory, without
// which the kernel refuses a new mount namespace to one thread of many.
func enterContainerNS(ns containerNS) error {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare mount and UTS namespaces: %w", err)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Sethostname([]byte(ns.hostname)); err != nil {
		return fmt.Errorf("set hostname %q: %w", ns.hostname, err)
	}
	if err := bindMount(ns.hostsFile, "/etc/hosts", false); err != nil {
		return err
	}
	if needsHostTmp(ns) {
		if err := bindMount("/tmp", hostTmp, false); err != nil {
			return err
		}
	}
	if err := bindMount(inPod(ns.tmpDir), "/tmp", false); err != nil {
		return err
	}
	for _, m := range ns.mounts {
		src := inPod(m.source)
		if err := makeMountPoint(src, m.target); err != nil {
			return err
		}
		if err := bindMount(src, m.target, m.readOnly); err != nil {
			return err
		}
	}
	return nil
}

// needsHostTmp reports whether a source lies under the host's /tmp, which
// the private /tmp hides.
func needsHostTmp(ns containerNS) bool {
	if inPod(ns.tmpDir) != ns.tmpDir {
		return true
	}
	for _, m := range ns.mounts {
		if inPod(m.source) != m.source {
			return true
		}
	}
	return false
}

// makeMountPoint creates target (a directory, or an empty file when the
// source is a file) if it is missing.
func makeMountPoint(src, target string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("mount %s: %w", src, err)
	}
	if st.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("create mount point: %w", err)
		}
		return nil
	}
	if _, err := os.Stat(target); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	return f.Close()
}

// bindMount mounts src on target, read-only when asked (a bind mount takes
// the read-only flag only on a remount).
func bindMount(src, target string, readOnly bool) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", src, target, err)
	}
	if !readOnly {
		return nil
	}
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", target, err)
	}
	return nil
}

// sigtermIsDefault reports whether process pid neither catches nor ignores
// SIGTERM (false when its status cannot be read).
func sigtermIsDefault(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	const bit = 1 << (syscall.SIGTERM - 1)
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "SigIgn" && key != "SigCgt") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err != nil || mask&bit != 0 {
			return false
		}
		seen++
	}
	return seen == 2
}
