package shim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// hiddenPaths are the paths hide covers in a container's mount namespace:
// the host's /tmp where the container still sees it (HostTmp), and those
// of ns.Hide outside /tmp (the private /tmp hides the others already).
func hiddenPaths(ns NS) []string {
	out := []string{HostTmp}
	for _, h := range ns.Hide {
		if InPod(h) == h && h != "/" {
			out = append(out, h)
		}
	}
	return out
}

// hide covers path with an empty read-only tmpfs (a directory) or
// /dev/null (a file), then binds back the directories of keep that lie
// under it, at their own paths. A path that does not exist is skipped.
func hide(path string, keep []string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		return BindMount("/dev/null", path, true)
	}
	// The kept directories are opened before the tmpfs covers them, and
	// bound from their descriptors.
	var fds []int
	var kept []string
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for _, k := range keep {
		if !strings.HasPrefix(k, path+"/") {
			continue
		}
		fd, err := syscall.Open(k, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
		fds, kept = append(fds, fd), append(kept, k)
	}
	if err := syscall.Mount("tmpfs", path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	for i, k := range kept {
		if err := os.MkdirAll(k, 0o755); err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), k, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
	}
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("", path, "", flags, ""); err != nil {
		return fmt.Errorf("hide %s: make it read-only: %w", path, err)
	}
	return nil
}

// devNodes are the host's devices a container's /dev holds, as runc's
// default devices.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// privateDev gives the container a /dev of its own on a tmpfs: the host's
// disks and other devices are out of its reach. The device nodes are
// opened before the tmpfs covers them, and bound from their descriptors.
func privateDev() error {
	fds := make([]int, 0, len(devNodes))
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for _, n := range devNodes {
		fd, err := syscall.Open("/dev/"+n, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/%s: %w", n, err)
		}
		fds = append(fds, fd)
	}
	if err := syscall.Mount("tmpfs", "/dev", "tmpfs", syscall.MS_NOSUID|syscall.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for i, n := range devNodes {
		target := "/dev/" + n
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("create %s: %w", target, err)
		}
		f.Close()
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
	}
	links := [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}, {"core", "/proc/kcore"}}
	for _, l := range links {
		if err := os.Symlink(l[1], "/dev/"+l[0]); err != nil {
			return fmt.Errorf("create /dev/%s: %w", l[0], err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir("/dev/"+d, 0o755); err != nil {
			return fmt.Errorf("create /dev/%s: %w", d, err)
		}
	}
	if err := syscall.Mount("devpts", "/dev/pts", "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := syscall.Mount("shm", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	return nil
}

// readOnlySys replaces /sys with a read-only sysfs and the cgroup
// hierarchy read-only under it (a root container could otherwise move
// itself out of its limits or kill other cgroups through cgroup.kill);
// where a new sysfs is refused, the host's is bound read-only.
func readOnlySys() error {
	flags := uintptr(syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("sysfs", "/sys", "sysfs", flags, ""); err == nil {
		_ = syscall.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", flags, "")
		return nil
	}
	if err := syscall.Mount("/sys", "/sys", "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mount /sys: %w", err)
	}
	if err := syscall.Mount("", "/sys", "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("make /sys read-only: %w", err)
	}
	return nil
}

// oPath is O_PATH of Linux, which package syscall lacks: a descriptor
// that names a file without opening it for reading.
const oPath = 0x200000
