package bolt

// arenaChunk is the size of one block of a recordArena. Records larger
// than a quarter of it get their own allocation, so a chunk is never
// mostly wasted.
const arenaChunk = 1 << 20

// recordArena hands out the buffers of the records one checkpoint puts
// into bbolt. bbolt keeps a reference to every key and value put until the
// transaction ends, so each record needs its own memory for that long; but
// not longer, so the next checkpoint reuses the same chunks instead of
// allocating (and later collecting) megabytes per checkpoint. Only the
// checkpoint (under Backend.ckptMu) uses it.
type recordArena struct {
	chunks [][]byte // the first used of them hold this checkpoint's records
	used   int      // chunks in use, the last one partly
}

// alloc returns an empty buffer with room for n bytes that stays untouched
// until reset.
func (a *recordArena) alloc(n int) []byte {
	if n > arenaChunk/4 {
		return make([]byte, 0, n)
	}
	if a.used == 0 || len(a.chunks[a.used-1])+n > arenaChunk {
		if a.used == len(a.chunks) {
			a.chunks = append(a.chunks, make([]byte, 0, arenaChunk))
		}
		a.used++
	}
	c := a.chunks[a.used-1]
	a.chunks[a.used-1] = c[:len(c)+n]
	return c[len(c) : len(c) : len(c)+n]
}

// reset makes every buffer reusable; the caller's transaction has ended.
// It keeps as many chunks as this checkpoint used, so an idle store
// shrinks back to one while a busy one allocates none.
func (a *recordArena) reset() {
	keep := max(a.used, 1)
	for i := keep; i < len(a.chunks); i++ {
		a.chunks[i] = nil
	}
	a.chunks = a.chunks[:min(keep, len(a.chunks))]
	for i := range a.chunks {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.used = 0
}
