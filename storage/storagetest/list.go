package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

var listTests = map[string]func(*testing.T, NewBackend){
	"Prefix":        testListPrefix,
	"Empty":         testListEmpty,
	"LimitAndMore":  testListLimit,
	"Paginate":      testListPaginate,
	"AtRevision":    testListAtRevision,
	"FutureOrGone":  testListFutureAndCompacted,
	"ValueIsCopied": testListValueIsCopied,
}

func listKeys(res storage.ListResult) []string {
	keys := make([]string, len(res.Items))
	for i, kv := range res.Items {
		keys[i] = kv.Key
	}
	return keys
}

func wantKeys(t *testing.T, res storage.ListResult, want ...string) {
	t.Helper()
	got := listKeys(res)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}

func list(t *testing.T, b storage.Backend, prefix string, opts storage.ListOptions) storage.ListResult {
	t.Helper()
	res, err := b.List(context.Background(), prefix, opts)
	if err != nil {
		t.Fatalf("List(%q, %+v): %v", prefix, opts, err)
	}
	return res
}

func testListPrefix(t *testing.T, nb NewBackend) {
	b := nb(t)
	for _, k := range []string{"/pods/ns/b", "/pods/ns/a", "/pods/ns2/a", "/podsx/a", "/jobs/ns/a"} {
		mustCreate(t, b, k, "v"+k)
	}
	res := list(t, b, "/pods/ns/", storage.ListOptions{})
	wantKeys(t, res, "/pods/ns/a", "/pods/ns/b")
	if res.More || res.Remaining != 0 {
		t.Fatalf("More=%v Remaining=%d for a full list", res.More, res.Remaining)
	}
	if res.Revision != b.CurrentRevision() {
		t.Fatalf("list revision %d, want current %d", res.Revision, b.CurrentRevision())
	}
	for _, kv := range res.Items {
		if string(kv.Value) != "v"+kv.Key || kv.ModRevision == 0 || kv.CreateRevision != kv.ModRevision {
			t.Fatalf("item %+v has wrong value or revisions", kv)
		}
	}
	wantKeys(t, list(t, b, "/pods/", storage.ListOptions{}), "/pods/ns/a", "/pods/ns/b", "/pods/ns2/a")
	wantKeys(t, list(t, b, "/", storage.ListOptions{}), "/jobs/ns/a", "/pods/ns/a", "/pods/ns/b", "/pods/ns2/a", "/podsx/a")
}

func testListEmpty(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/a/1", "x")
	res := list(t, b, "/b/", storage.ListOptions{})
	if len(res.Items) != 0 || res.More {
		t.Fatalf("listing an empty prefix gave %v More=%v", listKeys(res), res.More)
	}
	if res.Revision != b.CurrentRevision() {
		t.Fatalf("list revision %d, want %d", res.Revision, b.CurrentRevision())
	}
}

func testListLimit(t *testing.T, nb NewBackend) {
	b := nb(t)
	for i := range 5 {
		mustCreate(t, b, fmt.Sprintf("/k/%d", i), "v")
	}
	res := list(t, b, "/k/", storage.ListOptions{Limit: 2})
	wantKeys(t, res, "/k/0", "/k/1")
	if !res.More || res.Remaining != 3 {
		t.Fatalf("More=%v Remaining=%d, want true 3", res.More, res.Remaining)
	}
	res = list(t, b, "/k/", storage.ListOptions{Limit: 5})
	if res.More || res.Remaining != 0 || len(res.Items) != 5 {
		t.Fatalf("limit equal to the count: %v More=%v Remaining=%d", listKeys(res), res.More, res.Remaining)
	}
}

func testListPaginate(t *testing.T, nb NewBackend) {
	b := nb(t)
	var want []string
	for i := range 7 {
		k := fmt.Sprintf("/k/%02d", i)
		want = append(want, k)
		mustCreate(t, b, k, "v")
	}
	mustCreate(t, b, "/l/0", "other prefix")
	var got []string
	opts := storage.ListOptions{Limit: 3}
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		res := list(t, b, "/k/", opts)
		got = append(got, listKeys(res)...)
		if wantRemaining := int64(len(want) - len(got)); res.Remaining != wantRemaining {
			t.Fatalf("page %d: Remaining %d, want %d", page, res.Remaining, wantRemaining)
		}
		if !res.More {
			break
		}
		opts.After = res.Items[len(res.Items)-1].Key
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	res := list(t, b, "/k/", storage.ListOptions{After: "/k/03"})
	wantKeys(t, res, "/k/04", "/k/05", "/k/06")
}

// testListAtRevision lists as of an older revision: a backend either
// serves that exact state or reports ErrCompacted.
func testListAtRevision(t *testing.T, nb NewBackend) {
	b := nb(t)
	c1 := mustCreate(t, b, "/k/1", "one")
	mustCreate(t, b, "/k/2", "two")
	at := mustCreate(t, b, "/k/4", "four")
	mustUpdate(t, b, "/k/1", "one-b", 0)
	mustDelete(t, b, "/k/2", 0)
	mustCreate(t, b, "/k/3", "three")
	mustDelete(t, b, "/k/4", 0)
	mustCreate(t, b, "/k/4", "four-b")
	res, err := b.List(context.Background(), "/k/", storage.ListOptions{Revision: at})
	if errors.Is(err, storage.ErrCompacted) {
		t.Logf("backend keeps no history for List: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("List at %d: %v", at, err)
	}
	wantKeys(t, res, "/k/1", "/k/2", "/k/4")
	if res.Revision != at {
		t.Fatalf("list revision %d, want %d", res.Revision, at)
	}
	wantKV(t, res.Items[0], "/k/1", "one", c1, c1)
	if string(res.Items[1].Value) != "two" || string(res.Items[2].Value) != "four" {
		t.Fatalf("old values %q %q", res.Items[1].Value, res.Items[2].Value)
	}
	page := list(t, b, "/k/", storage.ListOptions{Revision: at, Limit: 1, After: "/k/1"})
	wantKeys(t, page, "/k/2")
	if !page.More || page.Remaining != 1 {
		t.Fatalf("paged old list More=%v Remaining=%d, want true 1", page.More, page.Remaining)
	}
}

func testListFutureAndCompacted(t *testing.T, nb NewBackend) {
	b := nb(t)
	r1 := mustCreate(t, b, "/k/1", "one")
	r2 := mustUpdate(t, b, "/k/1", "two", 0)
	r3 := mustUpdate(t, b, "/k/1", "three", 0)
	_, err := b.List(context.Background(), "/k/", storage.ListOptions{Revision: r3 + 1})
	wantErr(t, "List in the future", err, storage.ErrFuture)
	if err := b.Compact(context.Background(), r2); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	_, err = b.List(context.Background(), "/k/", storage.ListOptions{Revision: r1})
	wantErr(t, "List before the compaction point", err, storage.ErrCompacted)
	res := list(t, b, "/k/", storage.ListOptions{Revision: r3})
	if len(res.Items) != 1 || string(res.Items[0].Value) != "three" {
		t.Fatalf("List at current revision gave %+v", res.Items)
	}
}

func testListValueIsCopied(t *testing.T, nb NewBackend) {
	b := nb(t)
	mustCreate(t, b, "/k/1", "one")
	res := list(t, b, "/k/", storage.ListOptions{})
	copy(res.Items[0].Value, "XXX")
	kv, err := b.Get(context.Background(), "/k/1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if string(kv.Value) != "one" {
		t.Fatalf("mutating a listed value changed the store: %q", kv.Value)
	}
}
