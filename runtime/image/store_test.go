package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

func TestPullStoresAndUnpacks(t *testing.T) {
	reg := testRegistry(t)
	base := layerOf(t, entry{name: "etc/"}, entry{name: "etc/os-release", content: "ID=test\n"},
		entry{name: "gone", content: "x"}, entry{name: "opaque/"}, entry{name: "opaque/old", content: "old"},
		entry{name: "bin/"}, entry{name: "bin/sh", link: "busybox"})
	top := layerOf(t, entry{name: ".wh.gone"}, entry{name: "opaque/"}, entry{name: "opaque/.wh..wh..opq"}, entry{name: "opaque/new", content: "new"})
	img := testImage(t, v1.Config{Entrypoint: []string{"/bin/sh"}}, base, top)
	push(t, reg+"/test/app:1", img)

	s := openStore(t)
	ref, _ := name.ParseReference(reg + "/test/app:1")
	if _, ok, err := s.Lookup(ref); err != nil || ok {
		t.Fatalf("before the pull: ok=%v err=%v", ok, err)
	}
	got, err := s.Pull(context.Background(), ref, authn.DefaultKeychain, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got.Digest != want || got.Ref != ref.Name() || len(got.Layers) != 2 || got.Size <= 0 {
		t.Fatalf("pulled %+v, want digest %s and 2 layers", got, want)
	}
	byDigest, _ := name.ParseReference(reg + "/test/app@" + want.String())
	for _, r := range []name.Reference{ref, byDigest} {
		if found, ok, err := s.Lookup(r); err != nil || !ok || found.Digest != want {
			t.Fatalf("Lookup(%s) = %v, %v, %v", r, found, ok, err)
		}
	}
	dirs, err := s.Unpack(got)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "etc/os-release")); err != nil || string(b) != "ID=test\n" {
		t.Fatalf("bottom layer: %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dirs[0], "bin/sh")); err != nil || l != "busybox" {
		t.Fatalf("symlink: %q, %v", l, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dirs[1], "gone"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Fatalf("whiteout of gone: mode %o rdev %d err %v, want a 0/0 character device", st.Mode, st.Rdev, err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(dirs[1], "opaque"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Fatalf("opaque directory: %q, %v", buf[:n], err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], "opaque/.wh..wh..opq")); !os.IsNotExist(err) {
		t.Fatalf("the opaque marker was unpacked as a file: %v", err)
	}
}

func TestUnpackStaysInside(t *testing.T) {
	s := openStore(t)
	// "../evil" is taken relative to the layer's root, as tar -P would not.
	img, err := s.put(testImage(t, v1.Config{}, layerOf(t, entry{name: "../evil", content: "x"})), "example.com/dots:1")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := s.Unpack(img)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "evil")); err != nil {
		t.Fatalf("../evil not kept inside: %v", err)
	}
	if exists(filepath.Join(filepath.Dir(dirs[0]), "evil")) {
		t.Fatal("../evil was written outside the layer")
	}

	// A symlink to the host's /etc cannot be written through.
	img, err = s.put(testImage(t, v1.Config{}, layerOf(t, entry{name: "etc", link: "/etc"}, entry{name: "etc/evil", content: "x"})), "example.com/link:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unpack(img); err == nil {
		t.Fatal("unpacked an entry through a symlink")
	}
	if exists("/etc/evil") {
		t.Fatal("wrote /etc/evil")
	}
}

func TestPullWithPullSecret(t *testing.T) {
	reg := authRegistry(t, "alice", "s3cret")
	img := testImage(t, v1.Config{Cmd: []string{"true"}}, layerOf(t, entry{name: "f", content: "x"}))
	pushAuth(t, reg+"/private/app:1", img, "alice", "s3cret")
	ref, _ := name.ParseReference(reg + "/private/app:1")
	s := openStore(t)

	if _, err := s.Pull(context.Background(), ref, authn.NewMultiKeychain(), nil); err == nil {
		t.Fatal("pulled without credentials")
	}
	kc, err := KeychainFromSecrets([]*corev1.Secret{dockerConfigSecret(t, "http://"+reg+"/v1/", "alice", "s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(context.Background(), ref, kc, nil); err != nil {
		t.Fatalf("pull with the secret: %v", err)
	}
}

func TestMirrors(t *testing.T) {
	reg := testRegistry(t)
	img := testImage(t, v1.Config{}, layerOf(t, entry{name: "f", content: "x"}))
	push(t, reg+"/library/perl:5.34.0", img)
	m, err := ParseMirrors([]string{"docker.io=" + reg})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := ParseReference("perl:5.34.0")
	s := openStore(t)
	got, err := s.Pull(context.Background(), ref, authn.DefaultKeychain, m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref != "index.docker.io/library/perl:5.34.0" {
		t.Fatalf("stored as %q, want the name the pod gave", got.Ref)
	}
	if _, err := ParseMirrors([]string{"docker.io"}); err == nil {
		t.Fatal("accepted a mirror without =")
	}
}

func TestLoadListRemoveGC(t *testing.T) {
	shared := layerOf(t, entry{name: "shared", content: "s"})
	a := testImage(t, v1.Config{Cmd: []string{"a"}}, shared, layerOf(t, entry{name: "a", content: "a"}))
	b := testImage(t, v1.Config{Cmd: []string{"b"}}, shared, layerOf(t, entry{name: "b", content: "b"}))
	dir := t.TempDir()

	// a docker-save tarball with a tag
	tarPath := filepath.Join(dir, "a.tar")
	tagA, _ := name.NewTag("example.com/a:1")
	if err := tarball.WriteToFile(tarPath, tagA, a); err != nil {
		t.Fatal(err)
	}
	// an OCI layout naming b
	lp, err := layout.Write(filepath.Join(dir, "layout"), emptyIndex())
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(b, layout.WithAnnotations(map[string]string{containerdNameAnnotation: "example.com/b:2", RefAnnotation: "2"})); err != nil {
		t.Fatal(err)
	}

	s := openStore(t)
	for path, want := range map[string]string{tarPath: "example.com/a:1", filepath.Join(dir, "layout"): "example.com/b:2"} {
		got, err := s.Load(path, "")
		if err != nil || len(got) != 1 || got[0] != want {
			t.Fatalf("Load(%s) = %v, %v; want [%s]", path, got, err, want)
		}
	}
	if _, err := s.Load(filepath.Join(dir, "layout"), "example.com/renamed:3"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, i := range list {
		refs = append(refs, i.Ref)
	}
	if len(refs) != 3 || refs[0] != "example.com/a:1" || refs[1] != "example.com/b:2" || refs[2] != "example.com/renamed:3" {
		t.Fatalf("List = %v", refs)
	}

	bRef, _ := name.ParseReference("example.com/b:2")
	bImg, _, _ := s.Lookup(bRef)
	aRef, _ := name.ParseReference("example.com/a:1")
	aImg, _, _ := s.Lookup(aRef)
	if _, err := s.Unpack(aImg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unpack(bImg); err != nil {
		t.Fatal(err)
	}

	// Removing a: its own layer goes, the shared one stays for b.
	if removed, err := s.Remove("example.com/a:1"); err != nil || len(removed) != 1 {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if _, ok, _ := s.Lookup(aRef); ok {
		t.Fatal("a is still there")
	}
	if !exists(s.LayerDir(aImg.Layers[0])) || exists(s.LayerDir(aImg.Layers[1])) {
		t.Fatalf("after removing a: shared layer kept=%v, a's layer kept=%v", exists(s.LayerDir(aImg.Layers[0])), exists(s.LayerDir(aImg.Layers[1])))
	}
	// A layer in use survives GC even once no image references it.
	if err := s.HoldLayers(); err != nil {
		t.Fatal(err)
	}
	s.Acquire(bImg.Layers)
	for _, r := range []string{"example.com/b:2", "example.com/renamed:3"} {
		if _, err := s.Remove(r); err != nil {
			t.Fatal(err)
		}
	}
	if !exists(s.LayerDir(bImg.Layers[1])) {
		t.Fatal("GC removed a layer in use")
	}
	s.Release(bImg.Layers)
	res, err := s.GC()
	if err != nil || res.Layers != 2 {
		t.Fatalf("GC = %+v, %v; want the 2 released layers removed", res, err)
	}
	blobs, _ := os.ReadDir(filepath.Join(s.Root(), "oci", "blobs", "sha256"))
	if len(blobs) != 0 {
		t.Fatalf("%d blobs left after removing every image", len(blobs))
	}
	if _, err := s.Remove("example.com/b:2"); err == nil {
		t.Fatal("removed an image that is not there")
	}
}

func TestLoadRefusesOtherFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.txt")
	if err := os.WriteFile(p, []byte("not a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	if _, err := s.Load(p, ""); err == nil {
		t.Fatal("loaded a text file")
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("a failed load stored %v", list)
	}
}
