// Package imagetest builds container images in tests: a busybox image from
// the host's statically linked busybox (Debian's busybox-static), files of
// their own, and an in-memory registry on loopback to push them to. It
// needs no network.
package imagetest

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BusyboxPath is where Debian's busybox-static installs busybox.
const BusyboxPath = "/bin/busybox"

// busyboxApplets get a symlink in /bin of the busybox image.
var busyboxApplets = []string{"sh", "ash", "echo", "cat", "sleep", "ls", "id", "hostname", "pwd", "env", "true", "false", "test", "[", "mkdir", "touch", "rm", "ps", "kill", "wc", "grep", "head", "tail", "date", "expr", "seq", "printf", "stat", "mount", "whoami", "tar", "tr", "dd"}

// File is a file of a test layer.
type File struct {
	Name    string
	Content string
	Mode    int64 // 0o644 when zero
}

// Layer builds a layer of files (their parent directories included).
func Layer(t testing.TB, files ...File) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for _, d := range parents(f.Name) {
			if !dirs[d] {
				dirs[d] = true
				must(t, tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}))
			}
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if target, ok := strings.CutPrefix(f.Content, "symlink:"); ok {
			must(t, tw.WriteHeader(&tar.Header{Name: f.Name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}))
			continue
		}
		must(t, tw.WriteHeader(&tar.Header{Name: f.Name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(f.Content))}))
		_, err := tw.Write([]byte(f.Content))
		must(t, err)
	}
	must(t, tw.Close())
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	must(t, err)
	return l
}

func parents(p string) []string {
	var out []string
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		out = append(out, strings.Join(parts[:i], "/"))
	}
	return out
}

// BusyboxLayer is a layer with the host's static busybox as /bin/busybox
// and its applets as symlinks; the test is skipped without busybox-static.
func BusyboxLayer(t testing.TB) v1.Layer {
	t.Helper()
	b, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Skipf("needs a static busybox at %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	files := []File{{Name: "bin/busybox", Content: string(b), Mode: 0o755}}
	sort.Strings(busyboxApplets)
	for _, a := range busyboxApplets {
		files = append(files, File{Name: "bin/" + a, Content: "symlink:busybox"})
	}
	files = append(files,
		File{Name: "etc/passwd", Content: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\napp:x:1000:1000:app:/home/app:/bin/sh\n"},
		File{Name: "etc/group", Content: "root:x:0:\nnogroup:x:65534:\napp:x:1000:\nextra:x:2000:app\n"},
		File{Name: "tmp/.keep"})
	return Layer(t, files...)
}

// Image is an image of layers with config cfg (Env gets a PATH when it
// has none).
func Image(t testing.TB, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	must(t, err)
	hasPath := false
	for _, e := range cfg.Env {
		hasPath = hasPath || strings.HasPrefix(e, "PATH=")
	}
	if !hasPath {
		cfg.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, cfg.Env...)
	}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{Architecture: "amd64", OS: "linux", Config: cfg, RootFS: mustRootFS(t, img)})
	must(t, err)
	return img
}

func mustRootFS(t testing.TB, img v1.Image) v1.RootFS {
	cf, err := img.ConfigFile()
	must(t, err)
	return cf.RootFS
}

// Registry serves an in-memory registry on 127.0.0.1 until the test ends
// and returns its host:port.
func Registry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Push pushes img as ref.
func Push(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref)
	must(t, err)
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// Save writes img as a docker-save tarball tagged ref.
func Save(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	tag, err := name.NewTag(ref)
	must(t, err)
	must(t, tarball.WriteToFile(path, tag, img))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
