package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// rootfsPlan is how an image container's file system is put together in
// its mount namespace.
type rootfsPlan struct {
	// dir holds upper/, work/ and merged/ (the root).
	dir   string
	lower []string
	// copy unpacks the layers into merged/ instead of an overlay mount.
	copy      bool
	hostname  string
	hostsFile string
	// hostnameFile is the pod's /etc/hostname.
	hostnameFile string
	mounts       []shim.Mount
}

func (rp rootfsPlan) merged() string { return filepath.Join(rp.dir, "merged") }

// startInImage starts pr.cmd (argv, env, working directory seen from the
// container) in c's image: a thread of its own makes the mount and UTS
// namespaces and the rootfs, then starts the container init as PID 1 of a
// new PID namespace, which mounts /proc, pivot_roots, takes the user and
// execs the command. It returns once the command runs, or with the init's
// error when it could not start it.
func (p *pod) startInImage(pr *proc, c *ctr, ci *containerImage) error {
	cmd := pr.cmd
	uid, gid, groups := securityIDs(p.api, c.spec)
	spec := containerinit.Spec{Rootfs: filepath.Join(ci.dir, "merged"), Argv: cmd.Args, WorkDir: cmd.Dir,
		User: ci.img.Config.Config.User, RunAsUser: uid, RunAsGroup: gid, Groups: groups}
	if err := initCommand(cmd, spec); err != nil {
		return err
	}
	hostnameFile := filepath.Join(p.dir, "hostname")
	if err := os.WriteFile(hostnameFile, []byte(p.hostname+"\n"), 0o644); err != nil {
		return fmt.Errorf("write hostname: %w", err)
	}
	plan := rootfsPlan{dir: ci.dir, lower: ci.lower, copy: p.rt.imageCopy, hostname: p.hostname,
		hostsFile: p.hostsPath(), hostnameFile: hostnameFile, mounts: p.mounts(c)}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	cmd.ExtraFiles = []*os.File{statusW} // StatusFD in the init
	started := make(chan error, 1)
	shim.OnThreadOfItsOwn(func() {
		if err := enterImageNS(plan); err != nil {
			started <- err
			return
		}
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(pr.exited)
	})
	err = <-started
	statusW.Close()
	if err != nil {
		return err
	}
	// EOF once the init exec'd the command (the pipe is close-on-exec
	// there) or died; anything written is why it could not start it.
	msg, _ := io.ReadAll(statusR)
	if len(msg) > 0 {
		<-pr.exited
		return errors.New(string(msg))
	}
	return nil
}

// initCommand turns cmd into the start of the container init, which runs
// spec (cmd's own argv and directory) in the rootfs.
func initCommand(cmd *exec.Cmd, spec containerinit.Spec) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the batchlet binary for the container init: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args, cmd.Dir = self, []string{containerinit.Arg0, string(b)}, "/"
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return nil
}

// enterImageNS moves the calling thread (locked to its goroutine) into new
// mount and UTS namespaces and builds the container's root there: the
// image (overlay or copy), /dev, /sys, the pod's /etc/hosts, /etc/hostname
// and the host's /etc/resolv.conf, the volumes, and a /proc mount point.
// Every path inside the root is resolved within it, so the image's
// symlinks cannot lead a mount out.
func enterImageNS(rp rootfsPlan) error {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare mount and UTS namespaces: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Sethostname([]byte(rp.hostname)); err != nil {
		return fmt.Errorf("set hostname %q: %w", rp.hostname, err)
	}
	if err := mountRootfs(rp); err != nil {
		return err
	}
	root := rp.merged()
	if err := mountDev(root); err != nil {
		return err
	}
	if err := mountSys(root); err != nil {
		return err
	}
	if _, err := mountPointIn(root, "/proc", true); err != nil {
		return err
	}
	files := []shim.Mount{{Source: rp.hostsFile, Target: "/etc/hosts"}, {Source: rp.hostnameFile, Target: "/etc/hostname"}}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		files = append(files, shim.Mount{Source: "/etc/resolv.conf", Target: "/etc/resolv.conf", ReadOnly: true})
	}
	for _, m := range append(files, rp.mounts...) {
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Source, err)
		}
		target, err := mountPointIn(root, m.Target, st.IsDir())
		if err != nil {
			return err
		}
		if err := shim.BindMount(m.Source, target, m.ReadOnly); err != nil {
			return err
		}
	}
	return nil
}

// mountRootfs mounts the image at merged/: an overlay of the layers with
// the attempt's upper and work directories, or a private copy of them.
func mountRootfs(rp rootfsPlan) error {
	merged := rp.merged()
	upper, work := filepath.Join(rp.dir, "upper"), filepath.Join(rp.dir, "work")
	for _, d := range []string{upper, work, merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create rootfs: %w", err)
		}
	}
	if !rp.copy {
		if err := unix.Mount("overlay", merged, "overlay", 0, overlayOptions(rp.lower, upper, work)); err != nil {
			return fmt.Errorf("mount the image's layers (overlay): %w", err)
		}
		return nil
	}
	if err := copyLayers(rp.lower, merged); err != nil {
		return fmt.Errorf("copy the image's layers: %w", err)
	}
	// pivot_root wants the new root to be a mount point.
	if err := unix.Mount(merged, merged, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the rootfs: %w", err)
	}
	return nil
}

// overlayOptions lists the layers top first, as overlayfs stacks them.
func overlayOptions(lower []string, upper, work string) string {
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
