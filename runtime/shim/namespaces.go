package shim

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
)

// NsenterBin joins a running container's namespaces for exec.
const NsenterBin = "/usr/bin/nsenter"

// HostTmp is where the host's /tmp stays visible inside a container's
// mount namespace once /tmp is private.
const HostTmp = "/run/batchlet/hosttmp"

// InPod maps a host path to where it is seen inside a pod's mount
// namespace (the host's /tmp moves to HostTmp).
func InPod(path string) string {
	if path == "/tmp" {
		return HostTmp
	}
	if strings.HasPrefix(path, "/tmp/") {
		return HostTmp + path[len("/tmp"):]
	}
	return path
}

// Mount is a bind mount of a container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// NS describes the namespaces a container starts in: its pod's hostname,
// /etc/hosts and private /tmp (host paths), and its volumes.
type NS struct {
	Hostname  string  `json:"hostname"`
	HostsFile string  `json:"hostsFile"`
	TmpDir    string  `json:"tmpDir"`
	Mounts    []Mount `json:"mounts,omitempty"`
	// Hide are host paths the container must not see (the agent's data
	// dir, its credentials): each is covered with an empty read-only
	// tmpfs, or /dev/null for a file. The host's /tmp (at HostTmp) always
	// is. Keep are directories under them that stay visible at their
	// paths (the container's default working directory).
	Hide []string `json:"hide,omitempty"`
	Keep []string `json:"keep,omitempty"`
}

// Starter starts a container's process with Attr and waits for it: an
// exec.Cmd's Start and Wait, or the shim's own os.StartProcess.
type Starter struct {
	Attr  *syscall.SysProcAttr
	Start func() error
	Wait  func()
}

// StartNamespaced starts a container as PID 1 of a new PID namespace, in
// new mount and UTS namespaces set up as ns says, with no helper process: a
// thread of its own unshares and mounts, then clones the container, which
// inherits that thread's namespaces. It completes s.Attr first (CLONE_NEWPID,
// a session of its own, SIGKILL as parent-death signal). resolve, when set,
// runs on that thread before the start (to look the command up where the
// container sees its files). onStart, when set, runs on that thread right
// after the start, before the container can be reaped. That thread then
// waits for the container and closes exited.
func StartNamespaced(s Starter, ns NS, resolve func() error, onStart func(), exited chan<- struct{}) error {
	started := make(chan error, 1)
	OnThreadOfItsOwn(func() {
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
		s.Attr.Cloneflags |= syscall.CLONE_NEWPID
		s.Attr.Setsid = true
		// The kernel sends it when the creating thread ends: only once the
		// container has been waited for, or when its parent dies.
		s.Attr.Pdeathsig = syscall.SIGKILL
		if err := s.Start(); err != nil {
			started <- err
			return
		}
		if onStart != nil {
			onStart()
		}
		started <- nil
		s.Wait()
		close(exited)
	})
	return <-started
}

// OnThreadOfItsOwn runs fn in a new goroutine locked to an OS thread that
// ends with it. fn may change that thread's namespaces: the thread must not
// go back to Go's pool, so it is never unlocked (Go then ends it). Go
// cannot end the main thread, whose namespaces /proc/self also shows, so fn
// never runs there.
func OnThreadOfItsOwn(fn func()) {
	go func() {
		goruntime.LockOSThread()
		if syscall.Gettid() != syscall.Getpid() {
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
func enterContainerNS(ns NS) error {
	if err := syscall.Unshare(syscall.CLONE_FS | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare mount and UTS namespaces: %w", err)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := syscall.Sethostname([]byte(ns.Hostname)); err != nil {
		return fmt.Errorf("set hostname %q: %w", ns.Hostname, err)
	}
	if err := privateDev(); err != nil {
		return err
	}
	if err := readOnlySys(); err != nil {
		return err
	}
	if err := BindMount(ns.HostsFile, "/etc/hosts", false); err != nil {
		return err
	}
	if needsHostTmp(ns) {
		if err := BindMount("/tmp", HostTmp, false); err != nil {
			return err
		}
	}
	if err := BindMount(InPod(ns.TmpDir), "/tmp", false); err != nil {
		return err
	}
	for _, m := range ns.Mounts {
		src := InPod(m.Source)
		if err := makeMountPoint(src, m.Target); err != nil {
			return err
		}
		if err := BindMount(src, m.Target, m.ReadOnly); err != nil {
			return err
		}
	}
	// Last: the mounts above took their sources from under these paths.
	for _, h := range hiddenPaths(ns) {
		if err := hide(h, ns.Keep); err != nil {
			return err
		}
	}
	return nil
}

// needsHostTmp reports whether a source lies under the host's /tmp, which
// the private /tmp hides.
func needsHostTmp(ns NS) bool {
	if InPod(ns.TmpDir) != ns.TmpDir {
		return true
	}
	for _, m := range ns.Mounts {
		if InPod(m.Source) != m.Source {
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
	if err := os.MkdirAll(dirOf(target), 0o755); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	return f.Close()
}

// BindMount mounts src on target, read-only when asked (a bind mount takes
// the read-only flag only on a remount).
func BindMount(src, target string, readOnly bool) error {
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", src, target, err)
	}
	if !readOnly {
		return nil
	}
	if err := syscall.Mount("", target, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", target, err)
	}
	return nil
}

// SigtermIsDefault reports whether process pid neither catches nor ignores
// SIGTERM (false when its status cannot be read).
func SigtermIsDefault(pid int) bool {
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

// dirOf is filepath.Dir for the absolute, clean paths of mount points
// (path/filepath would initialise late in the binary: see the package doc).
func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}
