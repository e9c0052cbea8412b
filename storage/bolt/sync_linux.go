package bolt

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes the file's data (and the size it needs) to disk.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate reserves size bytes for f without changing its length, so
// appends up to there need no new blocks (and find room on a full disk).
func preallocate(f *os.File, size int64) error {
	const keepSize = 0x01 // FALLOC_FL_KEEP_SIZE
	err := syscall.Fallocate(int(f.Fd()), keepSize, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil // best effort where the filesystem cannot
	}
	return err
}

// inMemoryFS reports whether dir is on a tmpfs or ramfs.
func inMemoryFS(dir string) bool {
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == tmpfsMagic || st.Type == ramfsMagic
}
