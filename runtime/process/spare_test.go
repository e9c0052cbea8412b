package process

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSparePodDirIsEmptiedAndReused removes a pod whose directory has
// files, a changed /tmp and a foreign-owned working directory, and checks
// that the next pod gets that directory (the same inode) empty, with the
// modes and owner a new one has.
func TestSparePodDirIsEmptiedAndReused(t *testing.T) {
	r, err := New(Config{RootDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if r.spares == nil {
		t.Fatal("no spare pool")
	}
	first := newPod(r, testPod("first", corev1.RestartPolicyNever, corev1.Container{Name: "c", Command: []string{"true"}}), fakeResolver{})
	if err := first.setup(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"c.0.log", "tmp/left", "work/sub/deep"} {
		path := filepath.Join(first.dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(first.dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(first.dir, "work"), 1234, 1234); err != nil {
			t.Fatal(err)
		}
	}
	ino := inode(t, first.dir)
	first.cleanup()
	if _, err := os.Lstat(first.dir); !os.IsNotExist(err) {
		t.Fatalf("the removed pod's dir is still there: %v", err)
	}

	second := newPod(r, testPod("second", corev1.RestartPolicyNever, corev1.Container{Name: "c", Command: []string{"true"}}), fakeResolver{})
	if err := second.setup(); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, second.dir); got != ino {
		t.Errorf("the new pod's dir is inode %d, not the spare %d", got, ino)
	}
	want := []string{"work"}
	if r.namespaces {
		want = []string{"hosts", "tmp", "work"}
		if r.cfg.MemoryDir != "" {
			want = []string{"tmp", "work"}
		}
	}
	if got := entries(t, second.dir); !equalStrings(got, want) {
		t.Errorf("new pod dir has %v, want %v", got, want)
	}
	for _, d := range []string{"tmp", "work"} {
		if got := entries(t, filepath.Join(second.dir, d)); len(got) != 0 {
			t.Errorf("%s has %v", d, got)
		}
	}
	checkMode(t, filepath.Join(second.dir, "tmp"), podTmpMode)
	checkMode(t, filepath.Join(second.dir, "work"), 0o755)
	checkMode(t, second.dir, 0o755)
	if st := stat(t, filepath.Join(second.dir, "work")); int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
		t.Errorf("work is owned by %d:%d", st.Uid, st.Gid)
	}
}

// TestSparePodDirNotTakenOverFiles checks that a pod whose directory has
// files already (a resumed pod) keeps it, and the spare stays in the pool.
func TestSparePodDirNotTakenOverFiles(t *testing.T) {
	root := t.TempDir()
	s := newSpareDirs(root)
	if err := s.reset(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(root, "old")
	if err := os.MkdirAll(filepath.Join(old, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !s.recycle(old) {
		t.Fatal("not recycled")
	}
	resumed := filepath.Join(root, "resumed")
	if err := os.MkdirAll(resumed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(resumed, "c.0.log"), []byte("log"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := s.take(resumed); ok {
		t.Fatal("a spare replaced a directory with files")
	}
	if b, err := os.ReadFile(filepath.Join(resumed, "c.0.log")); err != nil || string(b) != "log" {
		t.Fatalf("the resumed pod's log: %q, %v", b, err)
	}
	ok, tmp, work := s.take(filepath.Join(root, "new"))
	if !ok || !tmp || work {
		t.Fatalf("take = %v, tmp %v, work %v; want the spare with tmp only", ok, tmp, work)
	}
}

// TestSparePodDirsRemovedAtStart checks that a new runtime removes the
// spares an earlier one left.
func TestSparePodDirsRemovedAtStart(t *testing.T) {
	root := t.TempDir()
	left := filepath.Join(root, spareDirName, "7", "tmp", "file")
	if err := os.MkdirAll(filepath.Dir(left), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{RootDir: root, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, filepath.Join(root, spareDirName)); len(got) != 0 {
		t.Errorf("spares left: %v", got)
	}
}

func inode(t *testing.T, path string) uint64 { return stat(t, path).Ino }

func stat(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (fs.ModePerm | fs.ModeSticky); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReapOrphansLeavesSpares checks that the reaper of pods the API no
// longer has does not take the spare pool for a pod directory.
func TestReapOrphansLeavesSpares(t *testing.T) {
	r, err := New(Config{RootDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(r.cfg.RootDir, "gone")
	if err := os.MkdirAll(filepath.Join(gone, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !r.spares.recycle(gone) {
		t.Fatal("not recycled")
	}
	r.ReapOrphans(map[types.UID]bool{})
	if ok, _, work := r.spares.take(filepath.Join(r.cfg.RootDir, "next")); !ok || !work {
		t.Fatalf("take = %v, work %v after reaping", ok, work)
	}
}
