package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// GCResult says what a garbage collection removed.
type GCResult struct {
	Blobs, Layers int
	// LayersSkipped: another process (a running server) uses unpacked
	// layers, so only blobs were collected.
	LayersSkipped bool
}

// HoldLayers marks this process as a user of the unpacked layers (a
// runtime), for as long as it runs: other processes sharing the store then
// leave the layers to this one's GC, which knows which are in use.
func (s *Store) HoldLayers() error {
	f, err := os.OpenFile(filepath.Join(s.root, "layers.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("hold image layers: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("hold image layers: %w", err)
	}
	// f stays open (and locked) until the process ends.
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
	return nil
}

// Acquire marks layers as used by a container until Release.
func (s *Store) Acquire(layers []v1.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range layers {
		s.inUse[h]++
	}
}

// Release ends an Acquire.
func (s *Store) Release(layers []v1.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range layers {
		if s.inUse[h]--; s.inUse[h] <= 0 {
			delete(s.inUse, h)
		}
	}
}

// GC removes the blobs no stored image references, and the unpacked
// layers no stored image references and no container uses.
func (s *Store) GC() (GCResult, error) {
	var res GCResult
	err := s.locked(true, func() error {
		keepBlobs, keepLayers, err := s.referenced()
		if err != nil {
			return err
		}
		if res.Blobs, err = s.collectBlobs(keepBlobs); err != nil {
			return err
		}
		release, ok := s.layersExclusive()
		if !ok {
			res.LayersSkipped = true
			return nil
		}
		defer release()
		res.Layers, err = s.collectLayers(keepLayers)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("image garbage collection: %w", err)
	}
	return res, nil
}

// referenced lists the blobs and layer diff IDs of the stored images. The
// lock is held.
func (s *Store) referenced() (blobs, layers map[string]bool, err error) {
	blobs, layers = map[string]bool{}, map[string]bool{}
	idx, err := s.oci.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	for _, d := range im.Manifests {
		blobs[d.Digest.Hex] = true
		img, err := s.oci.Image(d.Digest)
		if err != nil {
			return nil, nil, err
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, nil, err
		}
		blobs[m.Config.Digest.Hex] = true
		for _, l := range m.Layers {
			blobs[l.Digest.Hex] = true
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, nil, err
		}
		for _, h := range cfg.RootFS.DiffIDs {
			layers[h.Hex] = true
		}
	}
	return blobs, layers, nil
}

func (s *Store) collectBlobs(keep map[string]bool) (int, error) {
	dir := filepath.Join(string(s.oci), "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		// A layer being written has a temporary name (hex + random
		// digits); it is not ours to remove.
		if len(e.Name()) != 64 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return n, err
		}
		n++
	}
	return n, nil
}

// layersExclusive reports whether this process may decide which unpacked
// layers are unused: it holds them itself, or no other process does.
func (s *Store) layersExclusive() (release func(), ok bool) {
	if s.held {
		return func() {}, true
	}
	f, err := os.OpenFile(filepath.Join(s.root, "layers.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

func (s *Store) collectLayers(keep map[string]bool) (int, error) {
	entries, err := os.ReadDir(s.layersDir())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		hex := e.Name()
		if strings.Contains(hex, ".") {
			// An unpack in progress (<hex>.<random>) or left by a crash;
			// only this process's can be in progress.
			if _, busy := s.unpacking[hex[:strings.Index(hex, ".")]]; busy {
				continue
			}
		} else if keep[hex] || s.inUse[v1.Hash{Algorithm: "sha256", Hex: hex}] > 0 {
			continue
		}
		if err := removeAll(filepath.Join(s.layersDir(), hex)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// removeAll removes a directory tree, first making read-only directories
// writable (layers may contain them).
func removeAll(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(path)
}
