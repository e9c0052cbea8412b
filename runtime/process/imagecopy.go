package process

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"syscall"

	"golang.org/x/sys/unix"
)

// copyLayers applies the unpacked layers (bottom first, in overlayfs form)
// to dst, as overlayfs would show them: a 0/0 character device deletes
// what is below it, an opaque directory hides what is below it. It is the
// rootfs where an overlay mount is refused.
func copyLayers(layers []string, dst string) error {
	for _, layer := range layers {
		if err := applyLayer(layer, dst); err != nil {
			return err
		}
	}
	return nil
}

func applyLayer(layer, dst string) error {
	return filepath.WalkDir(layer, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(layer, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*unixStat)
		if isWhiteout(info) {
			return os.RemoveAll(target)
		}
		if info.IsDir() {
			if isOpaque(path) {
				if err := os.RemoveAll(target); err != nil {
					return err
				}
			}
			if existing, err := os.Lstat(target); err == nil && !existing.IsDir() {
				if err := os.RemoveAll(target); err != nil {
					return err
				}
			}
			if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
		} else {
			if err := os.RemoveAll(target); err != nil {
				return err
			}
			if err := copyEntry(path, target, info); err != nil {
				return err
			}
		}
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink == 0 {
			return unix.Chmod(target, st.Mode&0o7777)
		}
		return nil
	})
}

type unixStat = syscall.Stat_t

func isWhiteout(info os.FileInfo) bool {
	st, ok := info.Sys().(*unixStat)
	return ok && info.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0
}

func isOpaque(dir string) bool {
	buf := make([]byte, 2)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && string(buf[:n]) == "y"
}

// copyEntry copies a file, symlink or special file.
func copyEntry(src, dst string, info os.FileInfo) error {
	st := info.Sys().(*unixStat)
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		to, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(to, dst)
	case info.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	default:
		return unix.Mknod(dst, st.Mode, int(st.Rdev))
	}
}
