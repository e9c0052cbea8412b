package containerinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is a bind mount into the container's root.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// buildRootfs makes the container's root in the init's new mount and UTS
// namespaces: the image (overlay or the runtime's copy), /dev, /sys, a
// /proc mount point and the bind mounts (the pod's /etc/hosts and
// /etc/hostname, the host's /etc/resolv.conf, the volumes). Every path
// inside the root is resolved within it, so the image's symlinks cannot
// lead a mount out. Nothing mounted here propagates to the host.
func buildRootfs(rp Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Sethostname([]byte(rp.Hostname)); err != nil {
		return fmt.Errorf("set hostname %q: %w", rp.Hostname, err)
	}
	if err := mountRootfs(rp); err != nil {
		return err
	}
	root := rp.Rootfs
	if err := mountDev(root); err != nil {
		return err
	}
	if err := mountSys(root); err != nil {
		return err
	}
	if _, err := mountPointIn(root, "/proc", true); err != nil {
		return err
	}
	for _, m := range rp.Mounts {
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Source, err)
		}
		target, err := mountPointIn(root, m.Target, st.IsDir())
		if err != nil {
			return err
		}
		if err := bindMount(m.Source, target, m.ReadOnly); err != nil {
			return err
		}
	}
	return nil
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

// overlayOptions lists the layers top first, as overlayfs stacks them.
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

// devNodes are bind-mounted from the host into the container's /dev, as
// runc's default devices.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mountDev gives the container a minimal /dev on a tmpfs.
func mountDev(root string) error {
	dev, err := mountPointIn(root, "/dev", true)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		target := filepath.Join(dev, n)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("create /dev/%s: %w", n, err)
		}
		f.Close()
		if err := unix.Mount("/dev/"+n, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx", "core": "/proc/kcore"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("create /dev/%s: %w", name, err)
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

// mountSys mounts a read-only sysfs, or binds the host's read-only where a
// new one is refused.
func mountSys(root string) error {
	sys, err := mountPointIn(root, "/sys", true)
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("sysfs", sys, "sysfs", flags, ""); err == nil {
		return nil
	}
	if err := unix.Mount("/sys", sys, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mount /sys: %w", err)
	}
	return unix.Mount("", sys, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
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
