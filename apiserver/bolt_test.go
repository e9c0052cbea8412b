package apiserver

import (
	"path/filepath"
	"testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
)

// TestOverBolt runs the core scenarios over the durable backend.
func TestOverBolt(t *testing.T) {
	prev := newTestBackend
	defer func() { newTestBackend = prev }()
	newTestBackend = func(t *testing.T) storage.Backend {
		b, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	for name, f := range map[string]func(*testing.T){
		"JobCRUD": TestJobCRUD, "WatchResume": TestWatchResumesFromOlderRV, "WatchGone": TestWatchTooOldResourceVersionIsGone,
		"Selectors": TestWatchSelectorTransitions, "Pagination": TestListPagination, "Informer": TestInformerSeesEveryChangeInOrder,
		"Propagation": TestDeletePropagation, "Namespaces": TestNamespaceDeletion, "Patch": TestPatchTypes, "WatchList": TestWatchListInitialEventsThenBookmark,
	} {
		t.Run(name, f)
	}
}
