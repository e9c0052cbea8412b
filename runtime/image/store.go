package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"golang.org/x/sys/unix"
)

// RefAnnotation names an image in the store's index.json, as OCI layouts
// do; batchlet writes the full reference there
// ("index.docker.io/library/busybox:1.36").
const RefAnnotation = "org.opencontainers.image.ref.name"

// ErrNotFound is returned for an image the store does not have.
var ErrNotFound = errors.New("image not found")

// Store is the node's image store. Its methods are safe for concurrent use,
// also by several processes sharing the root (see the package doc).
type Store struct {
	root string
	oci  layout.Path

	mu sync.Mutex // serialises this process's holders of the file lock
	// held: a runtime uses the unpacked layers (HoldLayers), so only this
	// process's in-use counts decide which of them GC may remove.
	held  bool
	inUse map[v1.Hash]int
	// unpacking: layers being unpacked by this process (by hex), closed
	// when done.
	unpacking map[string]chan struct{}
}

// Image is a stored image.
type Image struct {
	// Ref is the full reference the image is stored under; empty for an
	// image known only by digest.
	Ref string
	// Digest is the manifest's digest.
	Digest v1.Hash
	Config *v1.ConfigFile
	// Layers are the layers' diff IDs, bottom first.
	Layers []v1.Hash
	// Size is what the image takes in the registry: manifest, config and
	// compressed layers.
	Size int64
}

// Open opens (creating if needed) the store rooted at root.
func Open(root string) (*Store, error) {
	s := &Store{root: root, oci: layout.Path(filepath.Join(root, "oci")), inUse: map[v1.Hash]int{},
		unpacking: map[string]chan struct{}{}}
	for _, dir := range []string{root, s.layersDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open image store: %w", err)
		}
	}
	err := s.locked(true, func() error {
		if _, err := os.Stat(filepath.Join(string(s.oci), "index.json")); err == nil {
			return nil
		}
		_, err := layout.Write(string(s.oci), empty.Index)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open image store %s: %w", root, err)
	}
	return s, nil
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) layersDir() string { return filepath.Join(s.root, "layers", "sha256") }

// LayerDir is where the layer with diff ID h is unpacked.
func (s *Store) LayerDir(h v1.Hash) string { return filepath.Join(s.layersDir(), h.Hex) }

// locked runs fn holding the store's file lock (exclusive when write).
func (s *Store) locked(write bool, fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.root, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lock image store: %w", err)
	}
	defer f.Close()
	how := unix.LOCK_SH
	if write {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		return fmt.Errorf("lock image store: %w", err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck
	return fn()
}

// ParseReference parses an image name as the kubelet does: without a
// registry it is Docker Hub's, without a tag or digest ":latest".
func ParseReference(image string) (name.Reference, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	return ref, nil
}

// Lookup returns the stored image ref names; false when there is none.
func (s *Store) Lookup(ref name.Reference) (*Image, bool, error) {
	var desc *v1.Descriptor
	err := s.locked(false, func() error {
		var err error
		desc, err = s.find(ref)
		return err
	})
	if err != nil || desc == nil {
		return nil, false, err
	}
	img, err := s.read(*desc)
	if err != nil {
		return nil, false, err
	}
	return img, true, nil
}

// find returns the index entry of ref (by name for a tag, by manifest
// digest for a digest); nil when there is none. The lock is held.
func (s *Store) find(ref name.Reference) (*v1.Descriptor, error) {
	idx, err := s.oci.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("read image index: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read image index: %w", err)
	}
	d, isDigest := ref.(name.Digest)
	for i := range im.Manifests {
		desc := im.Manifests[i]
		if isDigest && desc.Digest.String() == d.DigestStr() {
			return &desc, nil
		}
		if !isDigest && desc.Annotations[RefAnnotation] == ref.Name() {
			return &desc, nil
		}
	}
	return nil, nil
}

// read loads an index entry's manifest and config.
func (s *Store) read(desc v1.Descriptor) (*Image, error) {
	img, err := s.oci.Image(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("read image %s: %w", desc.Digest, err)
	}
	return describe(img, desc.Annotations[RefAnnotation])
}

// describe summarises img.
func describe(img v1.Image, ref string) (*Image, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image digest: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read image manifest: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("read image manifest: %w", err)
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return &Image{Ref: ref, Digest: digest, Config: cfg, Layers: cfg.RootFS.DiffIDs, Size: size}, nil
}

// put writes img's blobs and names it ref (the full reference; empty keeps
// it by digest only), replacing what ref named before.
func (s *Store) put(img v1.Image, ref string) (*Image, error) {
	// The blobs go in without the lock (layers land under temporary names
	// and are renamed), so a pull does not hold up readers; written again
	// under it, which skips those present, in case GC took one meanwhile.
	if err := s.oci.WriteImage(img); err != nil {
		return nil, fmt.Errorf("write image: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image digest: %w", err)
	}
	err = s.locked(true, func() error {
		if err := s.oci.WriteImage(img); err != nil {
			return err
		}
		matcher := match.Digests(digest)
		var opts []layout.Option
		if ref != "" {
			matcher = refOrUntagged(ref, digest)
			opts = append(opts, layout.WithAnnotations(map[string]string{RefAnnotation: ref}))
		}
		return s.oci.ReplaceImage(img, matcher, opts...)
	})
	if err != nil {
		return nil, fmt.Errorf("store image %s: %w", ref, err)
	}
	return describe(img, ref)
}

// refOrUntagged matches the entry named ref, and an untagged entry of the
// same digest (which the name now covers).
func refOrUntagged(ref string, digest v1.Hash) match.Matcher {
	return func(d v1.Descriptor) bool {
		if d.Annotations[RefAnnotation] == ref {
			return true
		}
		return d.Annotations[RefAnnotation] == "" && d.Digest == digest
	}
}

// Summary is one line of List.
type Summary struct {
	Ref     string
	Digest  v1.Hash
	ID      v1.Hash // the config's digest
	Size    int64
	Created time.Time
}

// List returns the stored images, sorted by reference.
func (s *Store) List() ([]Summary, error) {
	var descs []v1.Descriptor
	err := s.locked(false, func() error {
		idx, err := s.oci.ImageIndex()
		if err != nil {
			return err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		descs = im.Manifests
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var out []Summary
	for _, d := range descs {
		img, err := s.oci.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("list images: %w", err)
		}
		info, err := describe(img, d.Annotations[RefAnnotation])
		if err != nil {
			return nil, fmt.Errorf("list images: %w", err)
		}
		id, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("list images: %w", err)
		}
		out = append(out, Summary{Ref: info.Ref, Digest: info.Digest, ID: id, Size: info.Size, Created: info.Config.Created.Time})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ref != out[j].Ref {
			return out[i].Ref < out[j].Ref
		}
		return out[i].Digest.String() < out[j].Digest.String()
	})
	return out, nil
}

// Remove forgets the image named image (a reference, a manifest digest
// "sha256:…" or a unique prefix of its hex) and collects what no image
// uses any more. It returns the removed references.
func (s *Store) Remove(image string) ([]string, error) {
	var removed []string
	err := s.locked(true, func() error {
		idx, err := s.oci.ImageIndex()
		if err != nil {
			return err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		matcher, err := s.removalMatcher(image, im.Manifests)
		if err != nil {
			return err
		}
		for _, d := range im.Manifests {
			if matcher(d) {
				removed = append(removed, displayName(d))
			}
		}
		return s.oci.RemoveDescriptors(matcher)
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.GC(); err != nil {
		return removed, err
	}
	return removed, nil
}

func displayName(d v1.Descriptor) string {
	if r := d.Annotations[RefAnnotation]; r != "" {
		return r
	}
	return d.Digest.String()
}

// removalMatcher matches the entries image names; an error when none.
func (s *Store) removalMatcher(image string, descs []v1.Descriptor) (match.Matcher, error) {
	hexPrefix := strings.TrimPrefix(image, "sha256:")
	byDigest := func(d v1.Descriptor) bool {
		return len(hexPrefix) >= 6 && strings.HasPrefix(d.Digest.Hex, hexPrefix) && isHex(hexPrefix)
	}
	var byRef match.Matcher = func(v1.Descriptor) bool { return false }
	if ref, err := name.ParseReference(image); err == nil {
		byRef = func(d v1.Descriptor) bool {
			if dg, ok := ref.(name.Digest); ok {
				return d.Digest.String() == dg.DigestStr()
			}
			return d.Annotations[RefAnnotation] == ref.Name()
		}
	}
	m := func(d v1.Descriptor) bool { return byRef(d) || byDigest(d) }
	digests := map[v1.Hash]bool{}
	for _, d := range descs {
		if m(d) {
			digests[d.Digest] = true
		}
	}
	switch {
	case len(digests) == 0:
		return nil, fmt.Errorf("image %q: %w", image, ErrNotFound)
	case len(digests) > 1 && !anyMatches(byRef, descs):
		return nil, fmt.Errorf("image %q is ambiguous: %d images match", image, len(digests))
	}
	if anyMatches(byRef, descs) {
		return byRef, nil
	}
	return byDigest, nil
}

func anyMatches(m match.Matcher, descs []v1.Descriptor) bool {
	for _, d := range descs {
		if m(d) {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
