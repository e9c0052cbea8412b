package process

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// memoryBase holds the MemoryDirs of the runtimes on a host: a tmpfs
// (/run's, or one the first runtime mounts there). It is outside the paths
// a namespaced container's init replaces (/dev, /tmp, /proc, /sys), so the
// volumes in it can be bound into containers, and each runtime hides its
// own MemoryDir from them as it hides its RootDir.
const memoryBase = "/run/batchlet/memory"

// memoryDirPrefix starts the names of the MemoryDirs in memoryBase.
const memoryDirPrefix = "batchlet-"

// memoryDirOwner is the file in a MemoryDir naming the RootDir it serves.
const memoryDirOwner = "root"

// memoryDirPath is the MemoryDir of the runtime rooted at rootDir.
func memoryDirPath(rootDir string) string {
	abs, err := filepath.Abs(rootDir)
	if err != nil {
		abs = rootDir
	}
	h := fnv.New64a()
	h.Write([]byte(abs))
	return filepath.Join(memoryBase, fmt.Sprintf("%s%016x", memoryDirPrefix, h.Sum64()))
}

// DefaultMemoryDir is where the runtime rooted at rootDir keeps the
// volumes the kubelet keeps in memory (Config.MemoryDir): its directory
// in memoryBase once that is a tmpfs, which it mounts when /run is not one
// and the process may mount (it runs namespaced containers); "" when it
// is not a tmpfs (the volumes stay in the pods' directories).
func DefaultMemoryDir(rootDir string) string {
	if err := ensureMemoryBase(); err != nil {
		return ""
	}
	return memoryDirPath(rootDir)
}

// ensureMemoryBase makes memoryBase a tmpfs, under a lock so that two
// runtimes starting at once do not stack two (the second would hide what
// the first made).
func ensureMemoryBase() error {
	if isTmpfs(memoryBase) {
		return nil
	}
	// Its parent also holds containerinit.HostTmp, which containers of any
	// user reach through: only the memory base itself is private.
	if err := os.MkdirAll(filepath.Dir(memoryBase), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(memoryBase, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(memoryBase), ".memory.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	if isTmpfs(memoryBase) {
		return nil
	}
	return unix.Mount("tmpfs", memoryBase, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700")
}

// isTmpfs reports whether path is on a tmpfs.
func isTmpfs(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// RemoveMemoryDir removes the MemoryDir of the runtime rooted at rootDir,
// for who removes that RootDir with its pods.
func RemoveMemoryDir(rootDir string) {
	_ = os.RemoveAll(memoryDirPath(rootDir))
}

// makeMemoryDir makes dir, the MemoryDir of the runtime rooted at root,
// and removes the MemoryDirs beside it whose RootDir is gone (a data dir
// removed with pods in it): memory is only freed by removing them.
func makeMemoryDir(dir, root string) error {
	// Only the runtime reads it: containers get their volumes bound in.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create runtime memory dir %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, memoryDirOwner), []byte(root), 0o600); err != nil {
		return fmt.Errorf("create runtime memory dir %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		other := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), memoryDirPrefix) || other == dir {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(other, memoryDirOwner))
		if err != nil || !filepath.IsAbs(string(owner)) {
			continue
		}
		if _, err := os.Stat(string(owner)); errors.Is(err, fs.ErrNotExist) {
			_ = os.RemoveAll(other)
		}
	}
	return nil
}
