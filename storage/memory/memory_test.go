package memory_test

import (
	"testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/memory"
	"github.com/batchlet/batchlet/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.RunTests(t, func(t *testing.T) storage.Backend {
		b := memory.New(10_000)
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}

// TestConformanceSmallHistory runs the suite with a history shorter than
// its tests write, so the backend compacts on its own as they run.
func TestConformanceSmallHistory(t *testing.T) {
	storagetest.RunTests(t, func(t *testing.T) storage.Backend {
		b := memory.New(64)
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
