package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Whiteout markers of image layers (OCI image spec, "Whiteouts").
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// Unpack makes sure every layer of img is unpacked and returns their
// directories, bottom first (overlayfs wants them top first).
func (s *Store) Unpack(img *Image) ([]string, error) {
	dirs := make([]string, 0, len(img.Layers))
	for _, h := range img.Layers {
		if err := s.unpackLayer(img, h); err != nil {
			return nil, err
		}
		dirs = append(dirs, s.LayerDir(h))
	}
	return dirs, nil
}

// unpackLayer unpacks layer h of img unless it is already; one unpack per
// layer at a time, into a temporary directory renamed when complete.
func (s *Store) unpackLayer(img *Image, h v1.Hash) error {
	dir := s.LayerDir(h)
	for {
		if exists(dir) {
			return nil
		}
		s.mu.Lock()
		ch, busy := s.unpacking[h.Hex]
		if !busy {
			ch = make(chan struct{})
			s.unpacking[h.Hex] = ch
		}
		s.mu.Unlock()
		if !busy {
			break
		}
		<-ch
	}
	defer func() {
		s.mu.Lock()
		close(s.unpacking[h.Hex])
		delete(s.unpacking, h.Hex)
		s.mu.Unlock()
	}()
	if exists(dir) {
		return nil
	}
	stored, err := s.oci.Image(img.Digest)
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	layer, err := stored.LayerByDiffID(h)
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	defer rc.Close()
	tmp, err := os.MkdirTemp(s.layersDir(), h.Hex+".")
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	if err := extract(rc, tmp); err != nil {
		_ = removeAll(tmp)
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	// The layer's root directory gets the image's usual mode.
	_ = os.Chmod(tmp, 0o755)
	if err := os.Rename(tmp, dir); err != nil {
		_ = removeAll(tmp)
		if exists(dir) { // another process won
			return nil
		}
		return fmt.Errorf("unpack layer %s: %w", h, err)
	}
	return nil
}

// extract unpacks a layer tar into dir in overlayfs form: a whiteout file
// becomes a 0/0 character device, an opaque marker the directory's
// trusted.overlay.opaque xattr. Entries that would leave dir (through ".."
// or a symlink) are refused.
func extract(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	type dirTimes struct {
		path string
		hdr  *tar.Header
	}
	var dirs []dirTimes
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		rel, err := cleanEntry(hdr.Name)
		if err != nil {
			return err
		}
		if rel == "" {
			continue // the root itself
		}
		target := filepath.Join(dir, rel)
		if err := checkParents(dir, rel); err != nil {
			return err
		}
		base := filepath.Base(rel)
		parent := filepath.Dir(target)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return err
		}
		switch {
		case base == whiteoutOpaque:
			if err := unix.Setxattr(parent, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
				return fmt.Errorf("mark %s opaque: %w", rel, err)
			}
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			wh := filepath.Join(parent, strings.TrimPrefix(base, whiteoutPrefix))
			_ = removeAll(wh)
			if err := unix.Mknod(wh, unix.S_IFCHR, 0); err != nil {
				return fmt.Errorf("whiteout %s: %w", rel, err)
			}
			continue
		}
		if err := writeEntry(tr, hdr, dir, target); err != nil {
			return fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			dirs = append(dirs, dirTimes{target, hdr})
		}
	}
	// Directory times last: writing their entries changed them.
	for i := len(dirs) - 1; i >= 0; i-- {
		setTimes(dirs[i].path, dirs[i].hdr)
	}
	return nil
}

// cleanEntry makes a tar entry name relative and refuses one that leaves
// the root.
func cleanEntry(n string) (string, error) {
	c := filepath.Clean("/" + n)
	if c == "/" {
		return "", nil
	}
	rel := strings.TrimPrefix(c, "/")
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("layer entry %q leaves the root", n)
	}
	return rel, nil
}

// checkParents refuses an entry whose parent directories include a
// symlink, which could point anywhere on the host.
func checkParents(root, rel string) error {
	p := root
	parts := strings.Split(filepath.Dir(rel), "/")
	for _, part := range parts {
		if part == "." || part == "" {
			continue
		}
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("layer entry %q goes through the symlink %s", rel, strings.TrimPrefix(p, root))
		}
	}
	return nil
}

// writeEntry creates one non-whiteout entry with its mode, owner, times
// and extended attributes.
func writeEntry(tr *tar.Reader, hdr *tar.Header, root, target string) error {
	mode := uint32(hdr.Mode & 0o7777)
	// An entry replaces what a previous one of the same layer left there,
	// except a directory over a directory.
	if st, err := os.Lstat(target); err == nil && !(st.IsDir() && hdr.Typeflag == tar.TypeDir) {
		if err := removeAll(target); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case tar.TypeSymlink:
		return finishLink(os.Symlink(hdr.Linkname, target), target, hdr)
	case tar.TypeLink:
		src, err := cleanEntry(hdr.Linkname)
		if err != nil {
			return err
		}
		if err := checkParents(root, src); err != nil {
			return err
		}
		return os.Link(filepath.Join(root, src), target)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		kind := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknod(target, kind|mode, int(dev)); err != nil {
			return err
		}
	default:
		return nil // pax/gnu meta entries are consumed by tar.Reader; others are skipped
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	// chmod after chown, which clears setuid bits.
	if err := unix.Chmod(target, mode); err != nil {
		return err
	}
	setXattrs(target, hdr)
	if hdr.Typeflag != tar.TypeDir {
		setTimes(target, hdr)
	}
	return nil
}

// finishLink sets a symlink's owner and times.
func finishLink(err error, target string, hdr *tar.Header) error {
	if err != nil {
		return err
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	setTimes(target, hdr)
	return nil
}

func setXattrs(target string, hdr *tar.Header) {
	for k, v := range hdr.PAXRecords {
		if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			_ = unix.Lsetxattr(target, name, []byte(v), 0)
		}
	}
}

func setTimes(target string, hdr *tar.Header) {
	ts := []unix.Timespec{unix.NsecToTimespec(hdr.AccessTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	if hdr.AccessTime.IsZero() {
		ts[0] = ts[1]
	}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
}
