package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage/bolt"
)

// TestSnapshotWhileWriting: a snapshot taken while writes go on holds every
// write acknowledged before it started, at the revision it reports, and
// opens on its own as a store (no WAL beside it).
func TestSnapshotWhileWriting(t *testing.T) {
	// A long checkpoint interval keeps the acknowledged writes in the WAL
	// only, so the snapshot has to checkpoint them itself.
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1, CheckpointInterval: time.Hour})
	ctx := context.Background()
	var acked int64
	for i := range 200 {
		rev, err := b.Create(ctx, fmt.Sprintf("/before/%03d", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		acked = rev
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes during the snapshot
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.Create(ctx, fmt.Sprintf("/during/%06d", i), []byte("v")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var snap bytes.Buffer
	rev, err := b.Snapshot(&snap)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if rev < acked {
		t.Fatalf("snapshot at revision %d, before the acknowledged %d", rev, acked)
	}

	path := filepath.Join(t.TempDir(), "restored.db")
	if err := os.WriteFile(path, snap.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(path, bolt.Options{CompactInterval: -1, MustExist: true})
	if err != nil {
		t.Fatalf("open the snapshot: %v", err)
	}
	defer r.Close()
	if got := r.CurrentRevision(); got != rev {
		t.Errorf("restored revision %d, want the snapshot's %d", got, rev)
	}
	for i := range 200 {
		if _, err := r.Get(ctx, fmt.Sprintf("/before/%03d", i)); err != nil {
			t.Errorf("/before/%03d: %v", i, err)
		}
	}
}
