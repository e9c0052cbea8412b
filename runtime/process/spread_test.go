package process

import (
	"log/slog"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// On ext4 the runtime root is marked as the top of unrelated directory
// hierarchies (chattr +T), so the allocator spreads pod directories.
func TestRootDirSpreadsPodDirs(t *testing.T) {
	root := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil || fs.Type != unix.EXT4_SUPER_MAGIC {
		t.Skip("the temporary directory is not on ext4")
	}
	if _, err := New(Config{RootDir: root, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatal(err)
	}
	if flags&fsTopdirFlag == 0 {
		t.Fatalf("flags %#x lack FS_TOPDIR_FL", flags)
	}
}
