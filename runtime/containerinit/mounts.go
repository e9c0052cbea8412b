package containerinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is a bind mount into the container's root.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// HostTmp is where the host's /tmp stays visible inside a host
// container's mount namespace once /tmp is private (until hidden: see
// Spec.Hide), for the mounts whose sources lie under it.
const HostTmp = "/run/batchlet/hosttmp"

// InPod maps a host path to where a host container's mount namespace shows
// it (the host's /tmp moves to HostTmp).
func InPod(path string) string {
	if path == "/tmp" {
		return HostTmp
	}
	if strings.HasPrefix(path, "/tmp/") {
		return HostTmp + path[len("/tmp"):]
	}
	return path
}

// setUpMounts makes the container's mounts in the init's new mount and UTS
// namespaces, nothing of which propagates to the host: its root (the
// image's, overlay or the runtime's copy; the host's for a host
// container), a private /dev, a read-only /sys, the bind mounts, the
// hidden host paths, and last a fresh /proc (this process is PID 1 of the
// new PID namespace, whose view /proc takes; the steps before it read the
// host's /proc/self). An image container then pivot_roots into its root.
// Every path inside an image's root is resolved within it, so the image's
// symlinks cannot lead a mount out.
func setUpMounts(spec Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return fmt.Errorf("set hostname %q: %w", spec.Hostname, err)
	}
	root := spec.Rootfs
	if root == "" {
		root = "/"
	} else if err := mountRootfs(spec); err != nil {
		return err
	}
	if err := mountDev(root); err != nil {
		return err
	}
	if err := mountSys(root); err != nil {
		return err
	}
	if err := bindMounts(root, spec); err != nil {
		return err
	}
	if spec.Rootfs == "" {
		// Last: the mounts above took their sources from under these paths.
		for _, h := range hiddenPaths(spec.Hide) {
			if err := hide(h, spec.Keep); err != nil {
				return err
			}
		}
	}
	proc, err := mountPointIn(root, "/proc", true)
	if err != nil {
		return err
	}
	if err := mountProc(proc); err != nil {
		return err
	}
	if spec.Rootfs == "" {
		return nil
	}
	return enterRootfs(spec.Rootfs)
}

// bindMounts binds spec's mounts into root. A host container's private
// /tmp covers the host's, so the host's stays reachable at HostTmp for the
// sources under it (hidden once the mounts are made).
func bindMounts(root string, spec Spec) error {
	inPod := func(p string) string { return p }
	if spec.Rootfs == "" {
		inPod = InPod
		if needsHostTmp(spec.Mounts) {
			if err := bindMount("/tmp", HostTmp, false); err != nil {
				return err
			}
		}
	}
	for _, m := range spec.Mounts {
		src := inPod(m.Source)
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Source, err)
		}
		target, err := mountPointIn(root, m.Target, st.IsDir())
		if err != nil {
			return err
		}
		if err := bindMount(src, target, m.ReadOnly); err != nil {
			return err
		}
	}
	return nil
}

// needsHostTmp reports whether a mount's source lies under the host's
// /tmp, which a host container's private /tmp hides.
func needsHostTmp(mounts []Mount) bool {
	for _, m := range mounts {
		if InPod(m.Source) != m.Source {
			return true
		}
	}
	return false
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

// mountRootfs mounts the image at merged/: an overlay of the layers with
// the attempt's upper and work directories, or the copy of them the
// runtime made there.
func mountRootfs(rp Spec) error {
	merged := rp.Rootfs
	upper, work := filepath.Join(rp.Dir, "upper"), filepath.Join(rp.Dir, "work")
	for _, d := range []string{upper, work, merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create rootfs: %w", err)
		}
	}
	if !rp.Copied {
		if err := unix.Mount("overlay", merged, "overlay", 0, OverlayOptions(rp.Lower, upper, work)); err != nil {
			return fmt.Errorf("mount the image's layers (overlay): %w", err)
		}
		return nil
	}
	// The runtime copied the layers into merged/; pivot_root wants the
	// new root to be a mount point.
	if err := unix.Mount(merged, merged, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the rootfs: %w", err)
	}
	return nil
}

// OverlayOptions lists the layers top first, as overlayfs stacks them.
func OverlayOptions(lower []string, upper, work string) string {
	dirs := make([]string, len(lower))
	for i, l := range lower {
		dirs[len(lower)-1-i] = l
	}
	if len(dirs) == 0 {
		// An image without layers: an empty lower directory.
		dirs = []string{filepath.Join(filepath.Dir(upper), "empty")}
		_ = os.MkdirAll(dirs[0], 0o755)
	}
	return "lowerdir=" + strings.Join(dirs, ":") + ",upperdir=" + upper + ",workdir=" + work
}

// devNodes are the devices a container's /dev holds, as runc's default
// devices, with their numbers.
var devNodes = []struct {
	name         string
	major, minor uint32
}{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}}

// mountDev gives the container a /dev of its own on a tmpfs: the host's
// disks and other devices are out of its reach. The device nodes are made
// in it as runc makes them outside a user namespace (mknod, mode 0666,
// owned by root): one system call each, where binding the host's took an
// open, a create and a mount, and left six more mounts to tear down with
// the namespace. Where mknod is refused (a device cgroup), the host's node
// is bound instead, from the host's /dev opened before the tmpfs covers it
// (a host container's /dev is the host's).
func mountDev(root string) error {
	hostDev, err := unix.Open("/dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev: %w", err)
	}
	defer unix.Close(hostDev)
	dev, err := mountPointIn(root, "/dev", true)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	if err := makeDevNodes(dev, hostDev, unix.Mknod); err != nil {
		return err
	}
	links := [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}, {"core", "/proc/kcore"}}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(dev, l[0])); err != nil {
			return fmt.Errorf("create /dev/%s: %w", l[0], err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return fmt.Errorf("create /dev/%s: %w", d, err)
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := unix.Mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	return nil
}

// makeDevNodes makes devNodes in dev with mknod (unix.Mknod), else binds
// the host's from hostDev.
func makeDevNodes(dev string, hostDev int, mknod func(path string, mode uint32, dev int) error) error {
	umask := unix.Umask(0)
	defer unix.Umask(umask)
	for _, n := range devNodes {
		target := filepath.Join(dev, n.name)
		err := mknod(target, unix.S_IFCHR|0o666, int(unix.Mkdev(n.major, n.minor)))
		if err != nil {
			err = bindHostDev(hostDev, n.name, target)
		}
		if err != nil {
			return fmt.Errorf("create /dev/%s: %w", n.name, err)
		}
	}
	return nil
}

// bindHostDev binds the host's device node name (in hostDev, the host's
// /dev) at target.
func bindHostDev(hostDev int, name, target string) error {
	fd, err := unix.Openat(hostDev, name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	f.Close()
	return unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), target, "", unix.MS_BIND, "")
}

// mountSys mounts a read-only sysfs and the cgroup hierarchy read-only
// under it (a root container could otherwise move itself out of its limits
// or kill other cgroups through cgroup.kill); where a new sysfs is
// refused, the host's is bound read-only.
func mountSys(root string) error {
	sys, err := mountPointIn(root, "/sys", true)
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("sysfs", sys, "sysfs", flags, ""); err == nil {
		_ = unix.Mount("cgroup2", filepath.Join(sys, "fs", "cgroup"), "cgroup2", flags, "")
		return nil
	}
	if err := unix.Mount("/sys", sys, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mount /sys: %w", err)
	}
	if err := unix.Mount("", sys, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("make /sys read-only: %w", err)
	}
	return nil
}

// mountPointIn resolves path inside root (symlinks resolved within root)
// and creates it when missing: a directory, or an empty file.
func mountPointIn(root, path string, dir bool) (string, error) {
	target, err := resolveIn(root, path)
	if err != nil {
		return "", fmt.Errorf("mount point %s: %w", path, err)
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir() != dir && dir:
		return "", fmt.Errorf("mount point %s: not a directory", path)
	case err == nil:
		return target, nil
	}
	if dir {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return "", fmt.Errorf("create mount point %s: %w", path, err)
		}
		return target, nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", fmt.Errorf("create mount point %s: %w", path, err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("create mount point %s: %w", path, err)
	}
	return target, f.Close()
}

// resolveIn joins path to root as if root were "/": each symlink met is
// followed inside root (an absolute one from root), never out of it.
func resolveIn(root, path string) (string, error) {
	var resolved string // relative to root, cleaned
	rest := strings.Split(filepath.Clean("/"+path), "/")
	for links := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			resolved = filepath.Dir("/" + resolved)[1:]
			continue
		}
		next := filepath.Join(resolved, part)
		st, err := os.Lstat(filepath.Join(root, next))
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("too many levels of symbolic links")
		}
		to, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(to) {
			resolved = ""
		}
		rest = append(strings.Split(to, "/"), rest...)
	}
	return filepath.Join(root, resolved), nil
}
