package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/storage"
)

// smallDisk mounts a tmpfs of size bytes, so the store meets a real
// ENOSPC; it skips where mounting is not allowed (not root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); needs root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func TestFullDisk(t *testing.T) {
	disk := smallDisk(t, 16<<20)
	// Something else on the disk, freed later (pod logs, images).
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(disk, "state.db")
	fc := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	opts := Options{CompactInterval: -1, WALSegmentSize: 128 << 10, Clock: fc, Logger: quietLogger()}
	b, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	value := []byte(strings.Repeat("v", 8<<10))
	// advance lets the checkpointer run (it waits on the fake clock).
	advance := func() {
		for range 100_000 {
			if fc.HasWaiters() {
				fc.Step(time.Second)
				return
			}
			runtime.Gosched()
		}
	}

	// Fill the disk until a write is refused.
	acked := map[string]bool{}
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		key := fmt.Sprintf("/k/%04d", i)
		if _, err := b.Create(ctx, key, value); err != nil {
			refused = err
			break
		}
		acked[key] = true
		_ = b.Checkpoint() // keeps the WAL short; fails once the disk is full
	}
	if refused == nil || !strings.Contains(refused.Error(), "no space left on device") {
		t.Fatalf("filling the disk ended with %v, want no space left on device", refused)
	}
	if err := b.Ready(); err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Ready on a full disk = %v, want the reason naming %s", err, path)
	}

	// Deletes go through.
	deleted := 0
	for key := range acked {
		if deleted == 5 {
			break
		}
		if _, _, err := b.Delete(ctx, key, 0); err != nil {
			t.Fatalf("delete %s on a full disk: %v", key, err)
		}
		delete(acked, key)
		deleted++
	}
	if _, err := b.Create(ctx, "/k/refused", value); !errors.Is(err, ErrNoSpace) && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create on a full disk: %v, want no space", err)
	}

	// Space comes back: writes resume without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var after error
	for range 1000 {
		advance()
		if _, after = b.Create(ctx, "/k/after", value); after == nil {
			break
		}
	}
	if after != nil {
		t.Fatalf("create once space is back: %v", after)
	}
	acked["/k/after"] = true
	for range 1000 {
		if b.Ready() == nil {
			break
		}
		advance()
	}
	if err := b.Ready(); err != nil {
		t.Fatalf("Ready once space is back: %v", err)
	}

	// Every acknowledged write is there after a restart, deletes too.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(path, Options{CompactInterval: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	res, err := b2.List(ctx, "/k/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, kv := range res.Items {
		got[kv.Key] = true
	}
	for key := range acked {
		if !got[key] {
			t.Errorf("acknowledged %s lost", key)
		}
	}
	if len(got) != len(acked) {
		t.Errorf("%d keys after restart, want %d (deleted or refused writes came back)", len(got), len(acked))
	}
}

// A data dir on a tmpfs gets no zero-filled spares: its fdatasync is free
// and the zeros would take memory (and, on a full tmpfs, a spare's space
// freed or taken in the background would move where writes are refused).
func TestNoWALSparesOnTmpfs(t *testing.T) {
	disk := smallDisk(t, 64<<20)
	b, err := Open(filepath.Join(disk, "state.db"), Options{CompactInterval: -1, WALSegmentSize: 8 << 10, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	for i := range 200 {
		if _, err := b.Create(ctx, fmt.Sprintf("/k/%04d", i), []byte(strings.Repeat("v", 512))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := b.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.wal.mu.Lock()
	requests := b.wal.spare.requests
	b.wal.mu.Unlock()
	if requests != 0 {
		t.Fatalf("%d spares prepared on a tmpfs, want none", requests)
	}
}
