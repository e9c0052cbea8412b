package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
	"github.com/batchlet/batchlet/storage/storagetest"
)

func openTemp(t testing.TB, opts bolt.Options) (*bolt.Backend, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, path
}

func TestConformance(t *testing.T) {
	storagetest.RunTests(t, func(t *testing.T) storage.Backend {
		b, _ := openTemp(t, bolt.Options{CompactInterval: -1})
		return b
	})
}

func TestConformanceNoSync(t *testing.T) {
	storagetest.RunTests(t, func(t *testing.T) storage.Backend {
		b, _ := openTemp(t, bolt.Options{CompactInterval: -1, NoSync: true, HistoryWindow: 8})
		return b
	})
}
