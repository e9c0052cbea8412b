package bench

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestHeapProfilesAt checks that a heap profile is written once the Job
// reaches each asked size, and only then, named <path>.<N>.
func TestHeapProfilesAt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.pprof")
	r := &runner{cfg: Config{MemProfile: path, MemProfileAt: []int{30, 10}, Progress: io.Discard}, single: true}
	var succeeded atomic.Int64
	var res Result
	stop := r.heapProfilesAt("sim", func() int { return int(succeeded.Load()) }, &res)

	succeeded.Store(15)
	waitForFile(t, path+".10")
	if _, err := os.Stat(path + ".30"); !os.IsNotExist(err) {
		t.Fatalf("profile at 30 written at 15 succeeded (stat: %v)", err)
	}
	succeeded.Store(30)
	waitForFile(t, path+".30")
	stop()

	want := []string{"heap profile: " + path + ".10", "heap profile: " + path + ".30"}
	if !slices.Equal(res.Notes, want) {
		t.Errorf("notes = %q, want %q", res.Notes, want)
	}
}

// TestHeapProfilesAtOff checks that nothing runs without --memprofile.
func TestHeapProfilesAtOff(t *testing.T) {
	r := &runner{cfg: Config{MemProfileAt: []int{1}, Progress: io.Discard}}
	var res Result
	r.heapProfilesAt("sim", func() int { return 100 }, &res)()
	if len(res.Notes) != 0 {
		t.Errorf("notes = %q, want none", res.Notes)
	}
}

// waitForFile waits until path exists and is not empty; the test's own
// timeout bounds it.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
