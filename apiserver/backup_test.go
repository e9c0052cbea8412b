package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
	"github.com/batchlet/batchlet/storage/memory"
)

// TestBackupEndpoint: the snapshot is served to system:masters only, by
// GET, from a store that can copy itself; the body opens as a store at the
// revision of the trailer.
func TestBackupEndpoint(t *testing.T) {
	boltStore := func(t *testing.T) storage.Backend {
		b, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	memoryStore := func(*testing.T) storage.Backend { return memory.New(100) }
	for _, tc := range []struct {
		name     string
		store    func(*testing.T) storage.Backend
		token    string
		method   string
		wantCode int
		wantMsg  string
	}{
		{name: "admin", store: boltStore, token: testToken, method: http.MethodGet, wantCode: http.StatusOK},
		{name: "other user", store: boltStore, token: "alice-token", method: http.MethodGet, wantCode: http.StatusForbidden,
			wantMsg: `forbidden: User "alice" cannot get path "/debug/batchlet/backup"`},
		{name: "POST", store: boltStore, token: testToken, method: http.MethodPost, wantCode: http.StatusMethodNotAllowed},
		{name: "in-memory store", store: memoryStore, token: testToken, method: http.MethodGet, wantCode: http.StatusInternalServerError,
			wantMsg: "Internal error occurred: the store of this server (in memory) cannot be backed up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := newTestBackend
			defer func() { newTestBackend = prev }()
			newTestBackend = tc.store
			env := newTestEnvWith(t, func(c *Config) {
				c.RBAC = true
				c.Authenticator = endpoints.TokenMap{testToken: endpoints.AdminUser(), "alice-token": authenticationv1.UserInfo{Username: "alice"}}
			})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
			if _, err := env.client.CoreV1().ConfigMaps("default").Create(env.ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(tc.method, env.http.URL+BackupPath, nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode != http.StatusOK {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatalf("body is not a Status: %v: %s", err, body)
				}
				if tc.wantMsg != "" && st.Message != tc.wantMsg {
					t.Errorf("message %q, want %q", st.Message, tc.wantMsg)
				}
				return
			}
			checkSnapshot(t, body, resp.Trailer.Get(BackupRevisionHeader))
		})
	}
}

// checkSnapshot opens the body as a store: it is at the trailer's revision
// and holds the ConfigMap created before the backup.
func checkSnapshot(t *testing.T, body []byte, trailer string) {
	t.Helper()
	rev, err := strconv.ParseInt(trailer, 10, 64)
	if err != nil || rev <= 0 {
		t.Fatalf("trailer revision %q, want a revision", trailer)
	}
	path := filepath.Join(t.TempDir(), "restored.db")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(path, bolt.Options{NoSync: true, MustExist: true})
	if err != nil {
		t.Fatalf("open the snapshot: %v", err)
	}
	defer r.Close()
	if got := r.CurrentRevision(); got != rev {
		t.Errorf("snapshot revision %d, want %d", got, rev)
	}
	res, err := r.List(t.Context(), "/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range res.Items {
		if strings.HasSuffix(kv.Key, "/configmaps/default/kept") {
			return
		}
	}
	t.Errorf("the snapshot's %d keys lack the ConfigMap default/kept", len(res.Items))
}
