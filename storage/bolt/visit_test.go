package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
)

// visitAll collects what Visit hands over (copying the lent values) and
// stops after stopAfter keys when it is positive.
func visitAll(t *testing.T, b *bolt.Backend, prefix string, opts storage.ListOptions, stopAfter int) ([]storage.KeyValue, storage.ListResult) {
	t.Helper()
	var got []storage.KeyValue
	res, err := b.Visit(context.Background(), prefix, opts, func(key []byte, kv storage.KeyValue) (bool, error) {
		if kv.Key != "" {
			t.Errorf("Visit handed Key %q, want it empty", kv.Key)
		}
		kv.Key, kv.Value = string(key), bytes.Clone(kv.Value)
		got = append(got, kv)
		return stopAfter > 0 && len(got) >= stopAfter, nil
	})
	if err != nil {
		t.Fatalf("Visit %s %+v: %v", prefix, opts, err)
	}
	return got, res
}

// TestVisitMatchesList checks that Visit walks exactly what List returns,
// now and at an older revision, across checkpointed and WAL-only writes.
func TestVisitMatchesList(t *testing.T) {
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1, CheckpointInterval: time.Hour})
	ctx := context.Background()
	for i := range 6 {
		if _, err := b.Create(ctx, fmt.Sprintf("/p/%d", i), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Create(ctx, "/q/0", []byte("other prefix")); err != nil {
		t.Fatal(err)
	}
	old := b.CurrentRevision()
	if _, err := b.Update(ctx, "/p/1", []byte("v1b"), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Delete(ctx, "/p/2", 0); err != nil { // only in the WAL
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/p/25", []byte("new")); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []storage.ListOptions{{}, {Revision: old}, {After: "/p/1"}, {Revision: old, After: "/p/3"}} {
		want, err := b.List(ctx, "/p/", opts)
		if err != nil {
			t.Fatal(err)
		}
		got, res := visitAll(t, b, "/p/", opts, 0)
		if !reflect.DeepEqual(got, want.Items) {
			t.Errorf("%+v: Visit %v, List %v", opts, got, want.Items)
		}
		if res.Revision != want.Revision || res.More || res.Remaining != 0 || res.Items != nil {
			t.Errorf("%+v: Visit result %+v, List revision %d", opts, res, want.Revision)
		}
	}
}

// TestVisitStop checks that stopping early, or a limit, leaves More and
// Remaining counting the keys after the last one visited.
func TestVisitStop(t *testing.T) {
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1})
	ctx := context.Background()
	for i := range 5 {
		if _, err := b.Create(ctx, fmt.Sprintf("/p/%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	got, res := visitAll(t, b, "/p/", storage.ListOptions{}, 2)
	if len(got) != 2 || got[1].Key != "/p/1" || !res.More || res.Remaining != 3 {
		t.Fatalf("stop after 2: %d keys, last %q, More=%v Remaining=%d", len(got), got[len(got)-1].Key, res.More, res.Remaining)
	}
	got, res = visitAll(t, b, "/p/", storage.ListOptions{Limit: 3}, 0)
	if len(got) != 3 || !res.More || res.Remaining != 2 {
		t.Fatalf("limit 3: %d keys, More=%v Remaining=%d", len(got), res.More, res.Remaining)
	}
	got, res = visitAll(t, b, "/p/", storage.ListOptions{}, 5)
	if len(got) != 5 || res.More || res.Remaining != 0 {
		t.Fatalf("stop at the last key: %d keys, More=%v Remaining=%d", len(got), res.More, res.Remaining)
	}
}

// TestVisitError checks that an error from the callback ends the walk and
// is returned.
func TestVisitError(t *testing.T) {
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1})
	if _, err := b.Create(context.Background(), "/p/0", []byte("v")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, err := b.Visit(context.Background(), "/p/", storage.ListOptions{}, func([]byte, storage.KeyValue) (bool, error) { return false, boom })
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("Visit error = %v, want boom", err)
	}
}
