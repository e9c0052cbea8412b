package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// spareDirName is the directory in the RootDir holding emptied pod
// directories for reuse. Pod UIDs never start with a dot, and the reaper of
// orphaned pods skips directories without container records.
const spareDirName = ".spare"

// maxSparePodDirs bounds the spares kept: enough for the pods a node
// starts while as many end (a Job's parallelism), each three empty
// directories on disk.
const maxSparePodDirs = 256

// spareDirs recycles pod directories. Making a directory on ext4 allocates
// an inode, and removing one frees an inode the next allocations in its
// group scan past; renaming an emptied directory moves its inode instead.
// A removed pod's directory, once emptied (its tmp and work directories
// kept, empty, with the modes and owner setup gives them), goes into the
// pool; a new pod's directory is a spare renamed into place.
//
// Spares found at start-up (a crash, a restart) are removed: nothing is
// trusted that this process did not empty itself.
type spareDirs struct {
	dir string
	// uid and gid own a pod directory and its tmp and work directories.
	uid, gid int

	mu    sync.Mutex
	free  []spareDir
	count int // names the next spare
	ready bool
}

// spareDir is one spare pod directory and which of the pod directory's
// subdirectories it has.
type spareDir struct {
	name      string
	tmp, work bool
}

func newSpareDirs(root string) *spareDirs {
	return &spareDirs{dir: filepath.Join(root, spareDirName), uid: os.Geteuid(), gid: os.Getegid()}
}

// reset removes the spares an earlier process left and makes the pool's
// directory.
func (s *spareDirs) reset() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove spare pod dirs: %w", err)
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return fmt.Errorf("create spare pod dir pool: %w", err)
	}
	s.ready = true
	return nil
}

// take renames a spare to dir, which must not exist or be empty: ok
// reports whether it did, tmp and work which subdirectories the spare
// has. There may be none, or dir may have files (a resumed pod).
func (s *spareDirs) take(dir string) (ok, tmp, work bool) {
	s.mu.Lock()
	if len(s.free) == 0 {
		s.mu.Unlock()
		return false, false, false
	}
	sp := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.mu.Unlock()
	err := os.Rename(filepath.Join(s.dir, sp.name), dir)
	if err == nil {
		return true, sp.tmp, sp.work
	}
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist) {
		s.put(sp) // dir is in use; the spare is fine
	} else {
		_ = os.RemoveAll(filepath.Join(s.dir, sp.name))
	}
	return false, false, false
}

func (s *spareDirs) put(sp spareDir) {
	s.mu.Lock()
	s.free = append(s.free, sp)
	s.mu.Unlock()
}

// reserve names a new spare, or is false when the pool is full.
func (s *spareDirs) reserve() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ready || len(s.free) >= maxSparePodDirs {
		return "", false
	}
	s.count++
	return strconv.Itoa(s.count), true
}

// recycle empties the pod directory dir and moves it into the pool; false
// when the pool is full or dir could not be emptied, and dir is then
// for the caller to remove.
func (s *spareDirs) recycle(dir string) bool {
	name, ok := s.reserve()
	if !ok {
		return false
	}
	sp, err := s.empty(dir)
	if err != nil {
		return false
	}
	sp.name = name
	if err := os.Rename(dir, filepath.Join(s.dir, name)); err != nil {
		return false
	}
	s.put(sp)
	return true
}

// empty removes everything in the pod directory dir but its tmp and work
// directories, which it empties, and gives the three the modes and owner
// setup gives them (a container may have changed them).
func (s *spareDirs) empty(dir string) (spareDir, error) {
	var sp spareDir
	names, err := s.resetDir(dir, 0o755, nil)
	if err != nil {
		return sp, err
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		switch name {
		case "tmp":
			if _, err := s.resetDir(path, podTmpMode, os.RemoveAll); err != nil {
				return sp, err
			}
			sp.tmp = true
		case "work":
			if _, err := s.resetDir(path, 0o755, os.RemoveAll); err != nil {
				return sp, err
			}
			sp.work = true
		default:
			if err := os.RemoveAll(path); err != nil {
				return sp, err
			}
		}
	}
	return sp, nil
}

// resetDir checks that dir is a directory (not a symbolic link), gives it
// mode and the pool's owner if it has others, and returns its entries,
// or, with remove, applies it to each of them.
func (s *spareDirs) resetDir(dir string, mode os.FileMode, remove func(string) error) ([]string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != s.uid || int(st.Gid) != s.gid {
		if err := f.Chown(s.uid, s.gid); err != nil {
			return nil, err
		}
	}
	if fi.Mode()&(fs.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid) != mode {
		if err := f.Chmod(mode); err != nil {
			return nil, err
		}
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	if remove == nil {
		return names, nil
	}
	for _, name := range names {
		if err := remove(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
