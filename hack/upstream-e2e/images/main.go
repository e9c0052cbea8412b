// Command images writes the container images upstream's [sig-apps] Job e2e
// specs use — registry.k8s.io/e2e-test-images/busybox and
// registry.k8s.io/pause — as one docker-save tarball for `batchlet images
// load`, built from this machine's files instead of pulled: busybox from
// Debian's statically linked busybox (busybox-static), pause from
// hack/upstream-e2e/pause built static.
//
//	go run ./hack/upstream-e2e/images --busybox /bin/busybox --pause PAUSE --out images.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The references Kubernetes 1.34's e2e framework names
// (test/utils/image/manifest.go).
const (
	busyboxRef = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
	pauseRef   = "registry.k8s.io/pause:3.10.1"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	busybox := flag.String("busybox", "/bin/busybox", "statically linked busybox binary")
	pause := flag.String("pause", "", "statically linked pause binary (go build ./hack/upstream-e2e/pause with CGO_ENABLED=0)")
	out := flag.String("out", "images.tar", "docker-save tarball to write")
	flag.Parse()
	if err := run(*busybox, *pause, *out); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(busyboxPath, pausePath, out string) error {
	if pausePath == "" {
		return fmt.Errorf("--pause is required")
	}
	bb, err := busyboxImage(busyboxPath)
	if err != nil {
		return err
	}
	pause, err := pauseImage(pausePath)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for ref, img := range map[string]v1.Image{busyboxRef: bb, pauseRef: pause} {
		tag, err := name.NewTag(ref)
		if err != nil {
			return fmt.Errorf("parse %s: %w", ref, err)
		}
		refs[tag] = img
	}
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// busyboxImage holds busybox with a symlink per applet in /bin, as the
// upstream image has, and the directories scripts expect.
func busyboxImage(busyboxPath string) (v1.Image, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	list, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list busybox applets: %w", err)
	}
	files := []file{{name: "bin/busybox", content: bin, mode: 0o755}}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			files = append(files, file{name: "bin/" + applet, link: "busybox"})
		}
	}
	files = append(files,
		file{name: "etc/passwd", content: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"), mode: 0o644},
		file{name: "etc/group", content: []byte("root:x:0:\nnogroup:x:65534:\n"), mode: 0o644},
		file{name: "tmp/", mode: 0o1777}, file{name: "root/", mode: 0o700}, file{name: "var/", mode: 0o755})
	return image(files, v1.Config{Cmd: []string{"sh"}, Env: []string{"PATH=" + defaultPath}})
}

// pauseImage holds only /pause, its entrypoint.
func pauseImage(pausePath string) (v1.Image, error) {
	bin, err := os.ReadFile(pausePath)
	if err != nil {
		return nil, fmt.Errorf("read pause: %w", err)
	}
	return image([]file{{name: "pause", content: bin, mode: 0o755}},
		v1.Config{Entrypoint: []string{"/pause"}, Env: []string{"PATH=" + defaultPath}})
}

// file is one entry of a layer: a regular file, a directory (name ends in
// /) or a symlink to link.
type file struct {
	name    string
	content []byte
	link    string
	mode    int64
}

func image(files []file, cfg v1.Config) (v1.Image, error) {
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config = "amd64", "linux", cfg
	return mutate.ConfigFile(img, cf)
}

func tarOf(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(strings.TrimSuffix(f.name, "/")); d != "."; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					return nil, err
				}
			}
		}
		var hdr *tar.Header
		switch {
		case strings.HasSuffix(f.name, "/"):
			dirs[strings.TrimSuffix(f.name, "/")] = true
			hdr = &tar.Header{Name: f.name, Typeflag: tar.TypeDir, Mode: f.mode}
		case f.link != "":
			hdr = &tar.Header{Name: f.name, Typeflag: tar.TypeSymlink, Linkname: f.link, Mode: 0o777}
		default:
			hdr = &tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: f.mode, Size: int64(len(f.content))}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
