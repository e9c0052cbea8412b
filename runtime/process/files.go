package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fileWriter writes a pod's set-up files (volume contents, tokens,
// /etc/hosts) with the fewest system calls. os.OpenFile registers every
// descriptor with the runtime's poller — five fcntl and epoll_ctl calls a
// regular file written once does not need — and the kubelet's follow-up
// chmod is needed only where the umask took bits of the mode. Every pod
// pays this once per file, so it counts (issue 16).
type fileWriter struct {
	// umask is the process's file mode creation mask, valid when
	// umaskKnown; when unknown every created file is chmodded, as before.
	umask      uint32
	umaskKnown bool
}

// newFileWriter reads the process's umask once: nothing in batchlet
// changes it while it runs.
func newFileWriter() fileWriter {
	mask, err := readUmask("/proc/self/status")
	if err != nil {
		return fileWriter{}
	}
	return fileWriter{umask: mask, umaskKnown: true}
}

// readUmask parses the "Umask:" line of a /proc/<pid>/status file (Linux
// 4.7 and later); reading the mask with umask(2) would change it for a
// moment under every other goroutine.
func readUmask(statusFile string) (uint32, error) {
	b, err := os.ReadFile(statusFile)
	if err != nil {
		return 0, fmt.Errorf("read umask: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := bytes.CutPrefix(sc.Bytes(), []byte("Umask:"))
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
		if err != nil {
			return 0, fmt.Errorf("read umask: %w", err)
		}
		return uint32(n), nil
	}
	return 0, errors.New("read umask: no Umask line in " + statusFile)
}

// keepsMode reports whether a file created with mode perm gets exactly
// perm, the umask taking none of its bits.
func (w fileWriter) keepsMode(perm os.FileMode) bool {
	return w.umaskKnown && uint32(perm.Perm())&w.umask == 0
}

// writeFile is os.WriteFile(path, data, perm): created with perm less
// the umask, truncated when it exists.
func (w fileWriter) writeFile(path string, data []byte, perm os.FileMode) error {
	fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	return writeAndClose(fd, path, data)
}

// writeFileMode is os.WriteFile then os.Chmod: path ends up with data
// and exactly perm whether it existed or not. A new file takes perm at
// creation, so it is chmodded only when the umask took bits of it.
func (w fileWriter) writeFileMode(path string, data []byte, perm os.FileMode) error {
	return w.writeFileOwned(path, data, perm, -1, -1)
}

// writeFileOwned is writeFileMode that also gives the file to uid and gid
// (-1: unchanged), as os.Lchown would.
func (w fileWriter) writeFileOwned(path string, data []byte, perm os.FileMode, uid, gid int) error {
	err := w.createFile(path, data, perm, uid, gid)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	fd, err := openFile(path, unix.O_WRONLY|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	return setAttrsAndWrite(fd, path, data, perm, true, uid, gid)
}

// createFile makes path, which must not exist (an error matching
// fs.ErrExist if it does), with data, exactly perm, and the owner uid and
// gid (-1: unchanged).
func (w fileWriter) createFile(path string, data []byte, perm os.FileMode, uid, gid int) error {
	fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
	if err != nil {
		return err
	}
	return setAttrsAndWrite(fd, path, data, perm, !w.keepsMode(perm), uid, gid)
}

// setAttrsAndWrite sets the mode (when chmod) and owner of the open fd,
// then writes data and closes it.
func setAttrsAndWrite(fd int, path string, data []byte, perm os.FileMode, chmod bool, uid, gid int) error {
	if chmod {
		if err := ignoringEINTR(func() error { return unix.Fchmod(fd, uint32(perm.Perm())) }); err != nil {
			_ = unix.Close(fd)
			return &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	if uid != -1 || gid != -1 {
		if err := ignoringEINTR(func() error { return unix.Fchown(fd, uid, gid) }); err != nil {
			_ = unix.Close(fd)
			return &fs.PathError{Op: "chown", Path: path, Err: err}
		}
	}
	return writeAndClose(fd, path, data)
}

// openFile opens path for writing without the poller registration of
// os.OpenFile (see fileWriter).
func openFile(path string, flags int, perm os.FileMode) (int, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Open(path, flags|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// writeAndClose writes all of data to fd and closes it.
func writeAndClose(fd int, path string, data []byte) error {
	if err := writeAll(fd, data); err != nil {
		_ = unix.Close(fd)
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

// writeAll writes all of data to fd.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
