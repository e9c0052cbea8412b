package bolt

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// ErrNoSpace is returned for creates and updates while the disk is full:
// deletes still go through (into the WAL segment's preallocated reserve),
// and writes resume once a checkpoint and a new segment find room again.
var ErrNoSpace = errors.New("no space left on device")

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// spaceCause is what ran out of space.
type spaceCause int

const (
	causeAppend     spaceCause = iota // a WAL append (informational: each write retries)
	causeRotate                       // creating the next WAL segment
	causeCheckpoint                   // a checkpoint into the bbolt file
	numCauses
)

var causeNames = [numCauses]string{"appending to the write-ahead log", "creating a write-ahead log segment", "checkpointing into the store file"}

// spaceState tracks the out-of-space conditions; each clears when the
// operation that hit it succeeds again.
type spaceState struct {
	mu   sync.Mutex
	errs [numCauses]error
}

// set records or clears (err nil) a cause and reports whether it changed.
func (s *spaceState) set(c spaceCause, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := (s.errs[c] == nil) != (err == nil)
	s.errs[c] = err
	return changed
}

// refusal is the error creates and updates get, nil when they may run.
func (s *spaceState) refusal(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range []spaceCause{causeRotate, causeCheckpoint} {
		if s.errs[c] != nil {
			return fmt.Errorf("store %s: %w while %s; only deletes are accepted until space is freed", path, ErrNoSpace, causeNames[c])
		}
	}
	return nil
}

// reason describes every current condition, "" when there is none.
func (s *spaceState) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, err := range s.errs {
		if err != nil {
			return fmt.Sprintf("no space left on device while %s: %v", causeNames[c], err)
		}
	}
	return ""
}

// noteSpace records the outcome of an operation that can run out of space
// and logs when the condition starts or ends.
func (b *Backend) noteSpace(c spaceCause, err error) {
	if err != nil && !isNoSpace(err) {
		return
	}
	if !b.space.set(c, err) {
		return
	}
	if err != nil {
		b.opts.Logger.Error("disk full: creates and updates are refused, deletes still accepted", "file", b.path, "while", causeNames[c], "err", err)
	} else {
		b.opts.Logger.Info("disk space is back", "file", b.path, "while", causeNames[c])
	}
}

// Ready reports whether the store takes writes: an error says why not (a
// full disk, or a write-ahead log that failed and needs a restart).
func (b *Backend) Ready() error {
	if r := b.space.reason(); r != "" {
		return fmt.Errorf("store %s: %s", b.path, r)
	}
	b.walErrMu.Lock()
	defer b.walErrMu.Unlock()
	if b.walErr != nil {
		return fmt.Errorf("store %s: write-ahead log failed, writes are refused until restart: %w", b.path, b.walErr)
	}
	return nil
}
