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
