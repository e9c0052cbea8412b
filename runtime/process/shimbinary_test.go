package process

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestHelperBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		configured string
		// sidecar: what lies beside the agent as batchlet-shim: "" none,
		// "same" a binary of the agent's build, "other" not a Go binary.
		sidecar string
		want    string // "self", "sidecar" or "configured"
	}{
		{name: "configured wins", configured: "/opt/shim", sidecar: "same", want: "configured"},
		{name: "no sidecar", want: "self"},
		{name: "sidecar of the same build", sidecar: "same", want: "sidecar"},
		{name: "sidecar that is no Go binary of this build", sidecar: "other", want: "self"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			agent := filepath.Join(dir, "batchlet")
			sidecar := filepath.Join(dir, ShimBinaryName)
			switch tt.sidecar {
			case "same":
				// The test binary stands in for both: one build.
				if err := os.Symlink(self, sidecar); err != nil {
					t.Fatal(err)
				}
			case "other":
				if err := os.WriteFile(sidecar, []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, why := helperBinary(tt.configured, agent)
			want := map[string]string{"self": agent, "sidecar": sidecar, "configured": tt.configured}[tt.want]
			if got != want {
				t.Fatalf("helperBinary = %q (%s), want %q", got, why, want)
			}
		})
	}
}

func TestSameBuild(t *testing.T) {
	base := func() *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/batchlet/batchlet", Version: "v1.2.3", Sum: "h1:x"},
			Deps:     []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.48.0", Sum: "h1:s"}, {Path: "k8s.io/api", Version: "v0.34.0"}},
			Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}, {Key: "vcs.revision", Value: "abc"}}}
	}
	tests := []struct {
		name   string
		change func(shim *debug.BuildInfo)
		want   bool
	}{
		{name: "identical", change: func(*debug.BuildInfo) {}, want: true},
		{name: "the shim links fewer modules", change: func(b *debug.BuildInfo) { b.Deps = b.Deps[:1] }, want: true},
		{name: "other toolchain", change: func(b *debug.BuildInfo) { b.GoVersion = "go1.26.7" }, want: false},
		{name: "other module version", change: func(b *debug.BuildInfo) { b.Main.Version = "v1.2.2" }, want: false},
		{name: "other revision", change: func(b *debug.BuildInfo) { b.Settings[2].Value = "abd" }, want: false},
		{name: "other x/sys", change: func(b *debug.BuildInfo) { b.Deps[0].Version = "v0.47.0" }, want: false},
		{name: "a module the agent lacks", change: func(b *debug.BuildInfo) {
			b.Deps = append(b.Deps, &debug.Module{Path: "example.com/x", Version: "v1.0.0"})
		}, want: false},
		{name: "other architecture", change: func(b *debug.BuildInfo) { b.Settings[1].Value = "arm64" }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shim := base()
			tt.change(shim)
			if got := sameBuild(base(), shim); got != tt.want {
				t.Fatalf("sameBuild = %v, want %v", got, tt.want)
			}
		})
	}
}

// The binary chosen at start-up stays the one shims run, even once the
// file is gone from disk (an upgrade in place); one that cannot be opened
// leaves the agent's own.
func TestOpenHelperKeepsTheChosenFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "helper")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, configured string
		removeAfterOpen  bool
		wantSelf         bool
	}{
		{name: "removed after start-up", configured: bin, removeAfterOpen: true},
		{name: "missing at start-up", configured: filepath.Join(dir, "missing"), wantSelf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runtime{cfg: Config{ShimBinary: tt.configured}, log: slog.New(slog.DiscardHandler)}
			r.openHelper(filepath.Join(dir, "batchlet"))
			if tt.wantSelf {
				if r.helper != selfExe {
					t.Fatalf("helper = %q, want %q", r.helper, selfExe)
				}
				return
			}
			defer r.helperFile.Close()
			if tt.removeAfterOpen {
				if err := os.Remove(tt.configured); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := exec.Command(r.helper).CombinedOutput(); err != nil {
				t.Fatalf("run %s: %v: %s", r.helper, err, out)
			}
		})
	}
}
