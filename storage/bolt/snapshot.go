package bolt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

// Snapshot writes a consistent copy of the store to w while it keeps
// serving, and returns the revision the copy holds. The copy contains every
// write acknowledged before the call (it checkpoints the WAL into bbolt
// first, then copies bbolt in one read transaction), and it opens on its
// own: it is marked as closed cleanly, so no WAL segment is needed beside
// it. Writes go on during the copy; they are simply not in it.
func (b *Backend) Snapshot(w io.Writer) (rev int64, err error) {
	if b.isClosed() {
		return 0, storage.ErrClosed
	}
	if err := b.checkpoint(); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.path), ".snapshot-*.db")
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	err = b.db.View(func(tx *bbolt.Tx) error {
		rev = readInt(tx.Bucket(bucketMeta), metaRev)
		_, err := tx.WriteTo(tmp)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("snapshot: copy %s: %w", b.path, mapErr(err))
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if err := markClean(tmp.Name()); err != nil {
		return 0, err
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return 0, fmt.Errorf("snapshot: write: %w", err)
	}
	return rev, nil
}

// markClean drops the copy's record of an open WAL: everything the WAL
// held at the copy's revision is in the copy.
func markClean(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("snapshot: open copy: %w", err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Delete(metaWALOpen)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot: mark copy clean: %w", err)
	}
	return nil
}
