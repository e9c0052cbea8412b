package imagetest

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// libDirs are where the dynamic loader of a Debian amd64 host finds
// shared libraries.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// HostFiles copies host paths into image files at the same paths:
// directories recursively, symlinks followed (their target's content
// stored under the link's path), and for every ELF executable or shared
// object its program interpreter and the shared libraries it needs,
// transitively. A missing path skips the test with the reason.
func HostFiles(t testing.TB, paths ...string) []File {
	t.Helper()
	c := hostCollector{t: t, seen: map[string]bool{}}
	for _, p := range paths {
		c.add(p)
	}
	return c.files
}

type hostCollector struct {
	t     testing.TB
	seen  map[string]bool
	files []File
}

func (c *hostCollector) add(path string) {
	c.t.Helper()
	if c.seen[path] {
		return
	}
	c.seen[path] = true
	st, err := os.Stat(path)
	if err != nil {
		c.t.Skipf("building an image from the host's files needs %s: %v", path, err)
	}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		must(c.t, err)
		for _, e := range entries {
			c.add(filepath.Join(path, e.Name()))
		}
		return
	}
	b, err := os.ReadFile(path)
	must(c.t, err)
	c.files = append(c.files, File{Name: strings.TrimPrefix(path, "/"), Content: string(b), Mode: int64(st.Mode().Perm())})
	for _, dep := range elfDeps(path) {
		c.add(dep)
	}
}

// elfDeps is an ELF file's interpreter and needed libraries (none when it
// is not ELF or is linked statically).
func elfDeps(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var deps []string
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err == nil {
			deps = append(deps, strings.TrimRight(string(b), "\x00"))
		}
	}
	libs, _ := f.ImportedLibraries()
	for _, lib := range libs {
		for _, dir := range libDirs {
			if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
				deps = append(deps, filepath.Join(dir, lib))
				break
			}
		}
	}
	return deps
}
