package apiserver

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/memory"
)

// unreadyStore is a store that can be told it cannot take writes.
type unreadyStore struct {
	storage.Backend
	mu  sync.Mutex
	err error
}

func (s *unreadyStore) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func TestReadyzReportsTheStore(t *testing.T) {
	store := &unreadyStore{Backend: memory.New(100)}
	env := newTestEnvWith(t, func(c *Config) { c.Storage = store })
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(env.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	tests := []struct {
		name     string
		storeErr error
		path     string
		wantCode int
		wantBody string
	}{
		{"ready", nil, "/readyz", http.StatusOK, "ok"},
		{"disk full", errors.New("store /d/state.db: no space left on device while checkpointing into the store file"), "/readyz",
			http.StatusInternalServerError, "[-]storage failed: store /d/state.db: no space left on device while checkpointing into the store file\nreadyz check failed\n"},
		{"still live while not ready", errors.New("full"), "/livez", http.StatusOK, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store.mu.Lock()
			store.err = tt.storeErr
			store.mu.Unlock()
			code, body := get(tt.path)
			if code != tt.wantCode || body != tt.wantBody {
				t.Fatalf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}
