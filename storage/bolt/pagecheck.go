package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
)

// bbolt page layout, as far as the structure check needs it.
const (
	pageBranch      = 0x01
	pageLeaf        = 0x02
	elemSize        = 16 // branch and leaf element headers
	leafBucketFlag  = 0x01
	inBucketSize    = 16 // root pgid | sequence
	maxCheckedDepth = 64
)

// checkPages walks the B+tree of the store file from the root, reading the
// file itself (no mapping), and checks what bbolt's own walk checks: every
// page in bounds, of a tree type, reached once, with elements inside the
// page and keys in order. It runs before bbolt opens the file because
// bbolt rebuilds its free list with that walk on a goroutine of its own
// and cannot survive a damaged page there: the process would crash.
func checkPages(path string, m boltMeta) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := pageChecker{f: f, ps: int64(m.pageSize), hwm: m.pgid, seen: map[uint64]bool{}}
	_, err = c.tree(m.root, nil, nil, 0)
	return err
}

type pageChecker struct {
	f    *os.File
	ps   int64
	hwm  uint64
	seen map[uint64]bool
}

// read returns page id with its overflow pages, marking them reached.
func (c *pageChecker) read(id uint64) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		return nil, fmt.Errorf("page %d is out of bounds (the file has %d pages)", id, c.hwm)
	}
	hdr := make([]byte, pageHeaderSize)
	if _, err := c.f.ReadAt(hdr, int64(id)*c.ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(hdr); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	overflow := uint64(binary.LittleEndian.Uint32(hdr[12:]))
	if id+overflow >= c.hwm {
		return nil, fmt.Errorf("page %d overflows past the end (%d more pages)", id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen[i] {
			return nil, fmt.Errorf("page %d is referenced twice", i)
		}
		c.seen[i] = true
	}
	p := make([]byte, int64(overflow+1)*c.ps)
	if _, err := c.f.ReadAt(p, int64(id)*c.ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return p, nil
}

// tree checks the subtree at id, whose keys lie in [lo, hi) (nil: open),
// and returns its last key.
func (c *pageChecker) tree(id uint64, lo, hi []byte, depth int) ([]byte, error) {
	if depth > maxCheckedDepth {
		return nil, fmt.Errorf("page %d: the tree is deeper than %d levels", id, maxCheckedDepth)
	}
	p, err := c.read(id)
	if err != nil {
		return nil, err
	}
	return c.page(id, p, lo, hi, depth)
}

// page checks one page (p may be an inline bucket's page).
func (c *pageChecker) page(id uint64, p []byte, lo, hi []byte, depth int) ([]byte, error) {
	if len(p) < pageHeaderSize {
		return nil, fmt.Errorf("page %d is shorter than its header", id)
	}
	flags := binary.LittleEndian.Uint16(p[8:])
	count := int(binary.LittleEndian.Uint16(p[10:]))
	if flags != pageBranch && flags != pageLeaf {
		return nil, fmt.Errorf("page %d has type %#x, not a branch or leaf", id, flags)
	}
	if pageHeaderSize+count*elemSize > len(p) {
		return nil, fmt.Errorf("page %d: %d elements do not fit", id, count)
	}
	prev := lo
	for i := range count {
		e := pageHeaderSize + i*elemSize
		le := binary.LittleEndian
		pos, ksize := int(le.Uint32(p[e+4:])), int(le.Uint32(p[e+8:]))
		vsize := 0
		if flags == pageBranch {
			pos, ksize = int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:]))
		} else {
			vsize = int(le.Uint32(p[e+12:]))
		}
		start := e + pos
		if pos < 0 || ksize < 0 || vsize < 0 || start+ksize+vsize > len(p) || start+ksize+vsize < start {
			return nil, fmt.Errorf("page %d element %d points outside the page", id, i)
		}
		key := p[start : start+ksize]
		if (i == 0 && prev != nil && bytes.Compare(prev, key) > 0) || (i > 0 && bytes.Compare(prev, key) >= 0) ||
			(hi != nil && bytes.Compare(key, hi) >= 0) {
			return nil, fmt.Errorf("page %d element %d: keys out of order", id, i)
		}
		if flags == pageBranch {
			var next []byte = hi
			if i+1 < count {
				ne := pageHeaderSize + (i+1)*elemSize
				npos, nk := int(le.Uint32(p[ne:])), int(le.Uint32(p[ne+4:]))
				if ne+npos+nk > len(p) || npos < 0 || nk < 0 {
					return nil, fmt.Errorf("page %d element %d points outside the page", id, i+1)
				}
				next = p[ne+npos : ne+npos+nk]
			}
			last, err := c.tree(le.Uint64(p[e+8:]), key, next, depth+1)
			if err != nil {
				return nil, err
			}
			prev = last
			if prev == nil {
				prev = key
			}
			continue
		}
		prev = key
		if le.Uint32(p[e:])&leafBucketFlag != 0 {
			if err := c.bucket(id, i, p[start+ksize:start+ksize+vsize], depth); err != nil {
				return nil, err
			}
		}
	}
	return prev, nil
}

// bucket checks a nested bucket: its own tree, or its inline page.
func (c *pageChecker) bucket(id uint64, i int, v []byte, depth int) error {
	if len(v) < inBucketSize {
		return fmt.Errorf("page %d element %d: bucket header is %d bytes", id, i, len(v))
	}
	if root := binary.LittleEndian.Uint64(v); root != 0 {
		_, err := c.tree(root, nil, nil, depth+1)
		return err
	}
	_, err := c.page(id, v[inBucketSize:], nil, nil, depth+1)
	return err
}
