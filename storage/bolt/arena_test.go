package bolt

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/batchlet/batchlet/storage"
)

func TestSupersededEvents(t *testing.T) {
	ev := func(key string) storage.Event { return storage.Event{KV: storage.KeyValue{Key: key}} }
	tests := []struct {
		name   string
		events []storage.Event
		want   []bool
	}{
		{"none", nil, []bool{}},
		{"distinct keys", []storage.Event{ev("/a"), ev("/b")}, []bool{false, false}},
		{"a key changed three times", []storage.Event{ev("/a"), ev("/b"), ev("/a"), ev("/a")}, []bool{true, false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := supersededEvents(tt.events); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("supersededEvents = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecordArena(t *testing.T) {
	var a recordArena
	// Fill a little more than two chunks; no buffer may share memory with
	// another before reset.
	var bufs [][]byte
	for i := 0; len(bufs) < 2*arenaChunk/1000+10; i++ {
		b := a.alloc(1000)
		if len(b) != 0 || cap(b) != 1000 {
			t.Fatalf("alloc(1000) = len %d cap %d", len(b), cap(b))
		}
		bufs = append(bufs, append(b, make([]byte, 1000)...))
		bufs[i][0] = byte(i)
	}
	for i, b := range bufs {
		if b[0] != byte(i) {
			t.Fatalf("buffer %d was overwritten by a later one", i)
		}
	}
	if a.used != 3 {
		t.Fatalf("used %d chunks, want 3", a.used)
	}
	if big := a.alloc(arenaChunk); cap(big) != arenaChunk || a.used != 3 {
		t.Fatalf("a large record came from the chunks (cap %d, used %d)", cap(big), a.used)
	}
	a.reset()
	if len(a.chunks) != 3 || a.used != 0 {
		t.Fatalf("after a busy checkpoint: %d chunks kept, %d used; want 3, 0", len(a.chunks), a.used)
	}
	a.alloc(10)
	a.reset()
	if len(a.chunks) != 1 {
		t.Fatalf("after a small checkpoint: %d chunks kept, want 1", len(a.chunks))
	}
}

// TestCheckpointOfRepeatedKeys checkpoints one batch in which keys change
// several times (only their last state goes into the kv bucket) and checks
// the state, the log and the key count after reopening.
func TestCheckpointOfRepeatedKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	b, err := Open(path, Options{CompactInterval: -1, NoSync: true, CheckpointInterval: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(_ int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Create(ctx, "/a", []byte("a1")))
	must(b.Update(ctx, "/a", []byte("a2"), 0))
	must(b.Create(ctx, "/gone", []byte("g")))
	must(b.Create(ctx, "/back", []byte("b1")))
	if _, _, err := b.Delete(ctx, "/gone", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Delete(ctx, "/back", 0); err != nil {
		t.Fatal(err)
	}
	must(b.Create(ctx, "/back", []byte("b2")))
	must(b.Update(ctx, "/a", []byte("a3"), 0))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(path, Options{CompactInterval: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for key, want := range map[string]string{"/a": "a3", "/back": "b2"} {
		kv, err := b.Get(ctx, key)
		if err != nil || string(kv.Value) != want {
			t.Fatalf("Get %s = %q, %v; want %q", key, kv.Value, err, want)
		}
	}
	if _, err := b.Get(ctx, "/gone"); err != storage.ErrNotFound {
		t.Fatalf("Get /gone: %v, want ErrNotFound", err)
	}
	var tail []storage.Event
	err = b.db.View(func(tx *bbolt.Tx) error {
		tail, err = readTail(tx.Bucket(bucketLog), 100, 0)
		return err
	})
	if err != nil || len(tail) != 8 || tail[0].KV.ModRevision != 1 || tail[7].KV.ModRevision != 8 {
		t.Fatalf("log holds %d events (%v), want revisions 1 to 8", len(tail), err)
	}
}
