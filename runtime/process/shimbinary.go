package process

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
)

// ShimBinaryName is the small binary (cmd/batchlet-shim) that shims and
// container inits run when it lies beside the agent's executable: it links
// only runtime/shim and runtime/containerinit, so each of a container's two
// starts (shim, init) costs a fraction of the agent binary's page faults
// and runtime start-up.
const ShimBinaryName = "batchlet-shim"

// openHelper sets the binary shims and container inits run (see
// Runtime.helper).
func (r *Runtime) openHelper(self string) {
	path, why := helperBinary(r.cfg.ShimBinary, self)
	if path != self {
		f, err := os.Open(path)
		if err == nil {
			r.helper, r.helperFile = "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), f
			r.log.Debug("containers' shims and inits", "binary", path, "why", why)
			return
		}
		why = err.Error()
	}
	r.helper = selfExe
	r.log.Info("containers' shims and inits run the agent's own binary, which costs more per container than "+ShimBinaryName, "reason", why)
}

// helperBinary is the binary the runtime runs as shims (and, without
// shims, as container inits): configured when set, else batchlet-shim
// beside self when it comes from the same build, else self. why says how
// it was chosen, for the log.
func helperBinary(configured, self string) (path, why string) {
	if configured != "" {
		return configured, "configured"
	}
	cand := filepath.Join(filepath.Dir(self), ShimBinaryName)
	if _, err := os.Stat(cand); err != nil {
		return self, "no " + ShimBinaryName + " beside the agent's binary"
	}
	theirs, err := buildinfo.ReadFile(cand)
	if err != nil {
		return self, fmt.Sprintf("read the build of %s: %v", cand, err)
	}
	ours, ok := debug.ReadBuildInfo()
	if !ok {
		return self, "the agent's binary has no build information"
	}
	if !sameBuild(ours, theirs) {
		return self, cand + " comes from another build"
	}
	return cand, "same build"
}

// sameBuild reports whether two binaries come from the same build of the
// module as far as Go records it: toolchain, module version, the x/sys
// the shim links, VCS revision and state, target and flags. The shim's
// spec, descriptors and state file are an internal protocol between the
// agent and its shim, so a shim from another build is never used.
func sameBuild(a, b *debug.BuildInfo) bool {
	if a.GoVersion != b.GoVersion || a.Main.Path != b.Main.Path || a.Main.Version != b.Main.Version || a.Main.Sum != b.Main.Sum {
		return false
	}
	settings := func(bi *debug.BuildInfo) map[string]string {
		m := map[string]string{}
		for _, s := range bi.Settings {
			m[s.Key] = s.Value
		}
		return m
	}
	sa, sb := settings(a), settings(b)
	for _, k := range []string{"vcs.revision", "vcs.time", "vcs.modified", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "CGO_ENABLED", "-tags", "-trimpath"} {
		if sa[k] != sb[k] {
			return false
		}
	}
	// Every module the shim links must be the agent's version too.
	versions := map[string]string{}
	for _, d := range a.Deps {
		versions[d.Path] = d.Version + d.Sum
	}
	for _, d := range b.Deps {
		if versions[d.Path] != d.Version+d.Sum {
			return false
		}
	}
	return true
}
