package process

import (
	"os"
	"path/filepath"
	"testing"
)

// A runtime's MemoryDir names its RootDir, and making one removes those
// beside it whose RootDir is gone, and only those.
func TestMakeMemoryDirRemovesThoseOfRemovedRoots(t *testing.T) {
	base := t.TempDir()
	shm := filepath.Join(base, "shm")
	live, gone := filepath.Join(base, "live"), filepath.Join(base, "gone")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, root string }{
		{filepath.Join(shm, memoryDirPrefix+"live"), live},
		{filepath.Join(shm, memoryDirPrefix+"gone"), gone},
	} {
		if err := makeMemoryDir(tc.dir, tc.root); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(tc.dir, "pod-uid"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unrelated := filepath.Join(shm, "other")
	if err := os.Mkdir(unrelated, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(shm, memoryDirPrefix+"mine")
	if err := makeMemoryDir(mine, live); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{
		filepath.Join(shm, memoryDirPrefix+"live", "pod-uid"): true,
		filepath.Join(shm, memoryDirPrefix+"gone"):            false,
		unrelated: true,
		mine:      true,
	} {
		_, err := os.Stat(dir)
		if exists := err == nil; exists != want {
			t.Errorf("%s exists %v, want %v", dir, exists, want)
		}
	}
	info, err := os.Stat(mine)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("memory dir mode %v, want 0700", info.Mode().Perm())
	}
}
