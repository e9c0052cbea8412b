package genericstore

import (
	"bytes"
	"fmt"
	"testing"
)

// TestEncodedItemsKeepsNewestWithinBounds: the cache keeps the newest
// version listed per key, evicts the oldest-inserted keys past its count
// or its bytes, and never keeps an item over 1/64 of its bytes.
func TestEncodedItemsKeepsNewestWithinBounds(t *testing.T) {
	item := func(rev int64, size int) *encodedItem {
		return &encodedItem{rev: rev, msg: bytes.Repeat([]byte{'x'}, size)}
	}
	type add struct {
		key string
		it  *encodedItem
	}
	type want struct {
		key string
		rev int64
		hit bool
	}
	for _, tc := range []struct {
		name      string
		size      int
		maxBytes  int
		adds      []add
		wants     []want
		wantBytes int
	}{
		{"a newer version replaces", 4, 6400, []add{{"a", item(1, 10)}, {"a", item(3, 20)}},
			[]want{{"a", 3, true}, {"a", 1, false}}, 20},
		{"an older version does not", 4, 6400, []add{{"a", item(3, 20)}, {"a", item(1, 10)}},
			[]want{{"a", 3, true}, {"a", 1, false}}, 20},
		{"count bound evicts the oldest key", 2, 6400, []add{{"a", item(1, 10)}, {"b", item(2, 10)}, {"c", item(3, 10)}},
			[]want{{"a", 1, false}, {"b", 2, true}, {"c", 3, true}}, 20},
		{"too large is not kept", 4, 640, []add{{"a", item(1, 11)}},
			[]want{{"a", 1, false}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newEncodedItems(tc.size, tc.maxBytes)
			for _, a := range tc.adds {
				c.add("/v1", a.key, a.it)
			}
			for _, w := range tc.wants {
				if got := c.peek("/v1", []byte(w.key), w.rev) != nil; got != w.hit {
					t.Errorf("peek %s at %d: hit %v, want %v", w.key, w.rev, got, w.hit)
				}
			}
			if c.bytes != tc.wantBytes {
				t.Errorf("bytes %d, want %d", c.bytes, tc.wantBytes)
			}
		})
	}
}

// TestEncodedItemsEvictsByBytes: past its bytes the cache drops the
// oldest-inserted keys until the new item fits.
func TestEncodedItemsEvictsByBytes(t *testing.T) {
	c := newEncodedItems(100, 640) // items of at most 10 bytes
	for i := range 65 {
		c.add("/v1", fmt.Sprint(i), &encodedItem{rev: 1, msg: make([]byte, 10)})
	}
	for key, want := range map[string]bool{"0": false, "1": true, "64": true} {
		if got := c.peek("/v1", []byte(key), 1) != nil; got != want {
			t.Errorf("key %s kept %v, want %v", key, got, want)
		}
	}
	if c.bytes != 640 {
		t.Errorf("bytes %d, want 640", c.bytes)
	}
}
