package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// podShardCount is how many directories of the RootDir hold the pod
// directories (RootDir/<shard>/<uid>). ext4 takes a directory made in a
// directory marked +T (spreadPodDirs) as the top of a new hierarchy and
// reads every block group's descriptor to place it (find_group_orlov:
// ~100 µs of CPU on this 2,048-group disk), while one made in an ordinary
// directory goes beside its parent. So the shards are spread, once each,
// and the pods in them are not. The more shards, the fewer of the pods
// deleted recently each group holds, which ext4 without a journal scans
// past on every allocation in the group: in bench process on a data dir
// made just after the previous run's was deleted, the pods' mkdirs took
// 2.5 s (spread, no shards), 2.0 s with 256 shards, 1.8 with 1,024 and
// 1.6 with 2,048, making the shards included (0.5 s, once per data dir).
const podShardCount = 2048

// shardIndex picks uid's shard: FNV-1a, stable across versions, as a
// restarted runtime finds its pods by it.
func shardIndex(uid types.UID) int {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return int(h % podShardCount)
}

// shardName is the name of the shard directory number i: three lowercase
// hex digits, which no pod UID is.
func shardName(i int) string { return fmt.Sprintf("%03x", i) }

// isShardName reports whether a RootDir entry's name is a shard's.
func isShardName(name string) bool {
	if len(name) != 3 {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// shardDirs makes the shard directories on first use.
type shardDirs struct {
	made [podShardCount]atomic.Bool
}

// ensure makes the shard directory holding the pod directory dir unless
// this process made it or found it already.
func (s *shardDirs) ensure(i int, dir string) error {
	if s.made[i].Load() {
		return nil
	}
	err := os.Mkdir(filepath.Dir(dir), 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create pod shard dir: %w", err)
	}
	s.made[i].Store(true)
	return nil
}

// legacyPodDirs returns the UIDs of the pod directories an earlier version
// made directly in the RootDir (RootDir/<uid>): their pods, running or
// done, keep them, so that a restarted agent adopts their containers, serves
// their logs and reaps them. Names starting with a dot are the runtime's
// own (spares, the supervisor's socket).
func legacyPodDirs(root string) (map[types.UID]bool, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read runtime root: %w", err)
	}
	var legacy map[types.UID]bool
	for _, e := range entries {
		if !e.IsDir() || isShardName(e.Name()) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if legacy == nil {
			legacy = map[types.UID]bool{}
		}
		legacy[types.UID(e.Name())] = true
	}
	return legacy, nil
}

// podDirEntry is a pod directory found on disk.
type podDirEntry struct {
	uid types.UID
	dir string
}

// podDirsOnDisk lists the pod directories in the RootDir, in both layouts
// (RootDir/<uid> of earlier versions, RootDir/<shard>/<uid>), with the
// runtime's own (dot) entries left out.
func (r *Runtime) podDirsOnDisk() ([]podDirEntry, error) {
	root := r.cfg.RootDir
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var dirs []podDirEntry
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(root, e.Name())
		if !isShardName(e.Name()) {
			dirs = append(dirs, podDirEntry{uid: types.UID(e.Name()), dir: path})
			continue
		}
		pods, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if p.IsDir() {
				dirs = append(dirs, podDirEntry{uid: types.UID(p.Name()), dir: filepath.Join(path, p.Name())})
			}
		}
	}
	return dirs, nil
}
