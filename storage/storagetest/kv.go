package storagetest

import (
	"context"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

var kvTests = map[string]func(*testing.T, NewBackend){
	"CreateThenGet":            testCreateThenGet,
	"CreateExisting":           testCreateExisting,
	"GetMissing":               testGetMissing,
	"RevisionsCountWrites":     testRevisionsCountWrites,
	"UpdateUnconditional":      testUpdateUnconditional,
	"UpdatePrecondition":       testUpdatePrecondition,
	"UpdateMissing":            testUpdateMissing,
	"DeletePrecondition":       testDeletePrecondition,
	"DeleteMissing":            testDeleteMissing,
	"RecreateAfterDelete":      testRecreateAfterDelete,
	"ValueIsCopied":            testValueIsCopied,
	"CompactFutureAndCounters": testCompactCounters,
	"ClosedBackend":            testClosedBackend,
}

func testCreateThenGet(t *testing.T, nb NewBackend) {
	b := nb(t)
	rev := mustCreate(t, b, "/a/1", "one")
	if rev <= 0 {
		t.Fatalf("Create returned revision %d, want > 0", rev)
	}
	if got := b.CurrentRevision(); got != rev {
		t.Fatalf("CurrentRevision %d after Create at %d", got, rev)
	}
	kv, err := b.Get(context.Background(), "/a/1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a/1", "one", rev, rev)
}

func testCreateExisting(t *testing.T, nb NewBackend) {
	b := nb(t)
	rev := mustCreate(t, b, "/a/1", "one")
	_, err := b.Create(context.Background(), "/a/1", []byte("two"))
	wantErr(t, "second Create", err, storage.ErrExists)
	kv, err := b.Get(context.Background(), "/a/1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a/1", "one", rev, rev)
	if got := b.CurrentRevision(); got != rev {
		t.Fatalf("failed Create moved the revision to %d, want %d", got, rev)
	}
}

func testGetMissing(t *testing.T, nb NewBackend) {
	b := nb(t)
	_, err := b.Get(context.Background(), "/nothing")
	wantErr(t, "Get missing", err, storage.ErrNotFound)
}

func testRevisionsCountWrites(t *testing.T, nb NewBackend) {
	b := nb(t)
	r1 := mustCreate(t, b, "/a", "1")
	r2 := mustUpdate(t, b, "/a", "2", 0)
	r3 := mustCreate(t, b, "/b", "1")
	r4 := mustDelete(t, b, "/a", 0)
	if r2 != r1+1 || r3 != r2+1 || r4 != r3+1 {
		t.Fatalf("revisions %d %d %d %d, want consecutive", r1, r2, r3, r4)
	}
	if got := b.CurrentRevision(); got != r4 {
		t.Fatalf("CurrentRevision %d, want %d", got, r4)
	}
}

func testUpdateUnconditional(t *testing.T, nb NewBackend) {
	b := nb(t)
	c := mustCreate(t, b, "/a", "1")
	u := mustUpdate(t, b, "/a", "2", 0)
	if u <= c {
		t.Fatalf("update revision %d not after create %d", u, c)
	}
	kv, err := b.Get(context.Background(), "/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a", "2", c, u)
}

func testUpdatePrecondition(t *testing.T, nb NewBackend) {
	b := nb(t)
	c := mustCreate(t, b, "/a", "1")
	u := mustUpdate(t, b, "/a", "2", c)
	_, err := b.Update(context.Background(), "/a", []byte("stale"), c)
	wantErr(t, "Update with stale revision", err, storage.ErrConflict)
	kv, err := b.Get(context.Background(), "/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a", "2", c, u)
	if got := b.CurrentRevision(); got != u {
		t.Fatalf("conflicting Update moved the revision to %d, want %d", got, u)
	}
}

func testUpdateMissing(t *testing.T, nb NewBackend) {
	b := nb(t)
	_, err := b.Update(context.Background(), "/a", []byte("x"), 0)
	wantErr(t, "Update missing", err, storage.ErrNotFound)
	_, err = b.Update(context.Background(), "/a", []byte("x"), 7)
	wantErr(t, "Update missing with revision", err, storage.ErrNotFound)
}

func testDeletePrecondition(t *testing.T, nb NewBackend) {
	b := nb(t)
	c := mustCreate(t, b, "/a", "1")
	u := mustUpdate(t, b, "/a", "2", 0)
	_, _, err := b.Delete(context.Background(), "/a", c)
	wantErr(t, "Delete with stale revision", err, storage.ErrConflict)
	if _, err := b.Get(context.Background(), "/a"); err != nil {
		t.Fatalf("conflicting Delete removed the key: %v", err)
	}
	d, last, err := b.Delete(context.Background(), "/a", u)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if d != u+1 {
		t.Fatalf("delete revision %d, want %d", d, u+1)
	}
	wantKV(t, last, "/a", "2", c, u)
	_, err = b.Get(context.Background(), "/a")
	wantErr(t, "Get after Delete", err, storage.ErrNotFound)
}

func testDeleteMissing(t *testing.T, nb NewBackend) {
	b := nb(t)
	_, _, err := b.Delete(context.Background(), "/a", 0)
	wantErr(t, "Delete missing", err, storage.ErrNotFound)
}

func testRecreateAfterDelete(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/a", "1")
	mustDelete(t, b, "/a", 0)
	c := mustCreate(t, b, "/a", "again")
	kv, err := b.Get(context.Background(), "/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantKV(t, kv, "/a", "again", c, c)
}

func testValueIsCopied(t *testing.T, nb NewBackend) {
	b := nb(t)
	buf := []byte("orig")
	if _, err := b.Create(context.Background(), "/a", buf); err != nil {
		t.Fatalf("Create: %v", err)
	}
	copy(buf, "XXXX")
	kv, err := b.Get(context.Background(), "/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if string(kv.Value) != "orig" {
		t.Fatalf("stored value changed with the caller's buffer: %q", kv.Value)
	}
}

func testCompactCounters(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/a", "1")
	r := mustUpdate(t, b, "/a", "2", 0)
	err := b.Compact(context.Background(), r+1)
	wantErr(t, "Compact beyond current", err, storage.ErrFuture)
	if err := b.Compact(context.Background(), r-1); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if got := b.CompactRevision(); got != r-1 {
		t.Fatalf("CompactRevision %d, want %d", got, r-1)
	}
	// Compacting to an older revision never moves the point back.
	if err := b.Compact(context.Background(), 0); err != nil {
		t.Fatalf("Compact(0): %v", err)
	}
	if got := b.CompactRevision(); got != r-1 {
		t.Fatalf("CompactRevision %d after Compact(0), want %d", got, r-1)
	}
	kv, err := b.Get(context.Background(), "/a")
	if err != nil {
		t.Fatalf("Get after Compact: %v", err)
	}
	if string(kv.Value) != "2" {
		t.Fatalf("Compact changed the current value to %q", kv.Value)
	}
}

func testClosedBackend(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/a", "1")
	ch, err := b.Watch(ctxT(t), "/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectClosed(t, ch)
	ctx := context.Background()
	_, err = b.Create(ctx, "/b", nil)
	wantErr(t, "Create after Close", err, storage.ErrClosed)
	_, err = b.Update(ctx, "/a", nil, 0)
	wantErr(t, "Update after Close", err, storage.ErrClosed)
	_, _, err = b.Delete(ctx, "/a", 0)
	wantErr(t, "Delete after Close", err, storage.ErrClosed)
	_, err = b.Get(ctx, "/a")
	wantErr(t, "Get after Close", err, storage.ErrClosed)
	_, err = b.List(ctx, "/", storage.ListOptions{})
	wantErr(t, "List after Close", err, storage.ErrClosed)
	_, err = b.Watch(ctx, "/", 0)
	wantErr(t, "Watch after Close", err, storage.ErrClosed)
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
