package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// containerdNameAnnotation is where containerd and docker (25+) put an
// image's full name in an OCI layout; RefAnnotation often holds only the
// tag there.
const containerdNameAnnotation = "io.containerd.image.name"

// Load imports the images of path: an OCI image layout (a directory, or a
// tar of one) or a `docker save` tarball. The images keep the names the
// archive gives them; as, when set, names the archive's single image
// instead. It returns the names (or digests, for unnamed images) stored.
func (s *Store) Load(path, as string) ([]string, error) {
	var asRef name.Reference
	if as != "" {
		r, err := ParseReference(as)
		if err != nil {
			return nil, err
		}
		asRef = r
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	if st.IsDir() {
		return s.loadLayout(path, asRef)
	}
	members, err := tarMembers(path)
	if err != nil {
		return nil, fmt.Errorf("load images from %s: %w", path, err)
	}
	switch {
	case members["manifest.json"]:
		return s.loadDockerArchive(path, asRef)
	case members["oci-layout"] && members["index.json"]:
		dir, err := os.MkdirTemp(s.root, "load.")
		if err != nil {
			return nil, fmt.Errorf("load images: %w", err)
		}
		defer os.RemoveAll(dir)
		if err := untarPlain(path, dir); err != nil {
			return nil, fmt.Errorf("load images from %s: %w", path, err)
		}
		return s.loadLayout(dir, asRef)
	}
	return nil, fmt.Errorf("load images from %s: neither an OCI image layout nor a docker-save tarball (no manifest.json, oci-layout or index.json)", path)
}

// tarMembers lists the top-level regular files of a tar.
func tarMembers(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a tar archive: %w", err)
		}
		n := strings.TrimPrefix(filepath.Clean(hdr.Name), "./")
		if hdr.Typeflag == tar.TypeReg && !strings.Contains(n, "/") {
			out[n] = true
		}
	}
}

// untarPlain unpacks the regular files and directories of an OCI layout
// tar into dir.
func untarPlain(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := cleanEntry(hdr.Name)
		if err != nil || rel == "" {
			if err != nil {
				return err
			}
			continue
		}
		target := filepath.Join(dir, rel)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

func (s *Store) loadDockerArchive(path string, as name.Reference) ([]string, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(path) }
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, fmt.Errorf("load images from %s: %w", path, err)
	}
	if as != nil && len(manifest) != 1 {
		return nil, fmt.Errorf("load images from %s: a name applies to one image, the archive has %d", path, len(manifest))
	}
	var loaded []string
	for _, d := range manifest {
		img, err := archiveImage(opener, d, len(manifest))
		if err != nil {
			return loaded, fmt.Errorf("load images from %s: %w", path, err)
		}
		names := d.RepoTags
		if as != nil {
			names = []string{as.String()}
		}
		if len(names) == 0 {
			names = []string{""}
		}
		for _, n := range names {
			ref := ""
			if n != "" {
				r, err := ParseReference(n)
				if err != nil {
					return loaded, fmt.Errorf("load images from %s: %w", path, err)
				}
				ref = r.Name()
			}
			stored, err := s.put(img, ref)
			if err != nil {
				return loaded, err
			}
			loaded = append(loaded, displayRef(stored))
		}
	}
	return loaded, nil
}

// archiveImage opens the image d describes in a docker-save archive of n
// images (an untagged one can only be found when it is alone).
func archiveImage(opener tarball.Opener, d tarball.Descriptor, n int) (v1.Image, error) {
	if len(d.RepoTags) == 0 {
		if n != 1 {
			return nil, fmt.Errorf("an image without a tag in an archive of %d images", n)
		}
		return tarball.Image(opener, nil)
	}
	tag, err := name.NewTag(d.RepoTags[0])
	if err != nil {
		return nil, fmt.Errorf("tag %q: %w", d.RepoTags[0], err)
	}
	return tarball.Image(opener, &tag)
}

// displayRef is an image's name, or its digest when it has none.
func displayRef(img *Image) string {
	if img.Ref != "" {
		return img.Ref
	}
	return img.Digest.String()
}

func (s *Store) loadLayout(dir string, as name.Reference) ([]string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("load images from %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("load images from %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("load images from %s: %w", dir, err)
	}
	if as != nil && len(im.Manifests) != 1 {
		return nil, fmt.Errorf("load images from %s: a name applies to one image, the layout has %d", dir, len(im.Manifests))
	}
	var loaded []string
	for _, d := range im.Manifests {
		img, err := platformImage(idx, d)
		if err != nil {
			return loaded, fmt.Errorf("load images from %s: %w", dir, err)
		}
		ref := layoutName(d)
		if as != nil {
			ref = as.Name()
		}
		stored, err := s.put(img, ref)
		if err != nil {
			return loaded, err
		}
		loaded = append(loaded, displayRef(stored))
	}
	return loaded, nil
}

// layoutName is the full reference an OCI layout gives an image; empty
// when it gives only a tag or nothing.
func layoutName(d v1.Descriptor) string {
	for _, key := range []string{containerdNameAnnotation, RefAnnotation} {
		v := d.Annotations[key]
		if v == "" || !strings.ContainsAny(v, "/:@") {
			continue
		}
		if ref, err := name.ParseReference(v); err == nil {
			return ref.Name()
		}
	}
	return ""
}

// platformImage returns the image of an index entry; for a multi-platform
// entry, its manifest for Platform.
func platformImage(idx v1.ImageIndex, d v1.Descriptor) (v1.Image, error) {
	if !d.MediaType.IsIndex() {
		return idx.Image(d.Digest)
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range cm.Manifests {
		if m.MediaType == types.OCIManifestSchema1 || m.MediaType == types.DockerManifestSchema2 {
			if m.Platform == nil || m.Platform.Satisfies(Platform) {
				return child.Image(m.Digest)
			}
		}
	}
	return nil, fmt.Errorf("image %s has no manifest for %s/%s", d.Digest, Platform.OS, Platform.Architecture)
}
