package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// errImagesNeedNamespaces refuses an image container where pods get no
// namespaces.
var errImagesNeedNamespaces = errors.New("the image runtime needs root and Linux namespaces")

// selfExe is the binary of the container init a shim starts: the shim's
// own, by a path that still reaches it when the file was replaced on disk.
const selfExe = "/proc/self/exe"

// initSpec is the container init's spec for running argv in c's
// namespaces with workDir: the command with its ids and capabilities, and
// the container's mounts (for a host container: its hosts file, private
// /tmp and volumes over the host's root, the agent's files hidden; for an
// image container, see imageRoot).
func (p *pod) initSpec(c *ctr, argv []string, workDir string) (containerinit.Spec, error) {
	s := securityOf(p.api, c.spec)
	spec := containerinit.Spec{Hostname: p.hostname, Argv: argv, WorkDir: workDir,
		RunAsUser: s.uid, RunAsGroup: s.gid, Groups: s.groups,
		Privileged: s.privileged, CapAdd: s.capAdd, CapDrop: s.capDrop, NoNewPrivs: s.noNewPrivs}
	if c.image != nil {
		return spec, p.imageRoot(c, &spec)
	}
	spec.Mounts = append([]containerinit.Mount{{Source: p.hostsPath(), Target: "/etc/hosts"},
		{Source: filepath.Join(p.dir, "tmp"), Target: "/tmp"}}, p.mounts(c)...)
	spec.Hide = p.rt.hiddenPaths()
	if c.spec.WorkingDir == "" {
		// The pod's default working directory lies under the hidden root.
		spec.Keep = []string{workDir}
	}
	return spec, nil
}

// imageRoot completes spec for c's image: the root the init builds (an
// overlay of the layers, or a copy of them made here, in the host's mount
// namespace, where the kernel refuses overlayfs), the image's user, and
// the pod's /etc/hosts and /etc/hostname, the host's /etc/resolv.conf and
// the volumes bound into it.
func (p *pod) imageRoot(c *ctr, spec *containerinit.Spec) error {
	ci := c.image
	hostnameFile := filepath.Join(p.dir, "hostname")
	if err := os.WriteFile(hostnameFile, []byte(p.hostname+"\n"), 0o644); err != nil {
		return fmt.Errorf("write hostname: %w", err)
	}
	merged := filepath.Join(ci.dir, "merged")
	if p.rt.imageCopy {
		if err := os.MkdirAll(merged, 0o755); err != nil {
			return fmt.Errorf("create rootfs: %w", err)
		}
		if err := copyLayers(ci.lower, merged); err != nil {
			return fmt.Errorf("copy the image's layers: %w", err)
		}
	}
	mounts := []containerinit.Mount{{Source: p.hostsPath(), Target: "/etc/hosts"}, {Source: hostnameFile, Target: "/etc/hostname"}}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		mounts = append(mounts, containerinit.Mount{Source: "/etc/resolv.conf", Target: "/etc/resolv.conf", ReadOnly: true})
	}
	spec.Rootfs, spec.Dir, spec.Lower, spec.Copied = merged, ci.dir, ci.lower, p.rt.imageCopy
	spec.Mounts = append(mounts, p.mounts(c)...)
	spec.User = ci.img.Config.Config.User
	return nil
}

// initArgv is the argv of the container init that runs spec.
func initArgv(spec containerinit.Spec) ([]string, error) {
	return initArgvAs(containerinit.Arg0, spec)
}

// initArgvAs is the argv of the container init that runs spec in the mode
// arg0 names (containerinit.Arg0 or ExecArg0).
func initArgvAs(arg0 string, spec containerinit.Spec) ([]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("container init spec: %w", err)
	}
	if arg0 == containerinit.Arg0 {
		// The plan lets batchlet-shim's C init start the container
		// without a Go runtime (runtime/containerinit/cinit).
		if plan, ok := containerinit.CPlan(spec); ok {
			return []string{arg0, string(b), plan}, nil
		}
	}
	return []string{arg0, string(b)}, nil
}

// startInit starts cmd (argv, env, working directory seen from the
// container) without a shim (Config.NoShims, and the runtime's probe): it
// becomes the container init that runs spec (binary, the runtime's helper:
// batchlet-shim or the agent's own), started by shim.StartInit as a shim
// starts it. exited is closed once it has been waited for.
func startInit(cmd *exec.Cmd, binary string, spec containerinit.Spec, exited chan struct{}) error {
	args, err := initArgv(spec)
	if err != nil {
		return err
	}
	status, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	defer status.Close()
	cmd.Path, cmd.Dir = binary, "/"
	if cmd.Env == nil { // inherit, as exec.Cmd would
		cmd.Env = os.Environ()
	}
	cmd.Args, cmd.Env = shim.InitStart(args, cmd.Env)
	cmd.ExtraFiles = []*os.File{statusW} // containerinit.StatusFD
	return shim.StartInit(cmdStarter(cmd), status, statusW, nil, exited)
}

// execSpec is the container init's exec-mode spec for running argv in c,
// whose PID 1 is pr: the container's user, groups and capabilities, as
// initSpec gives its command.
func (p *pod) execSpec(c *ctr, pr *proc, argv []string, workDir string, tty bool) containerinit.Spec {
	s := securityOf(p.api, c.spec)
	spec := containerinit.Spec{Argv: argv, WorkDir: workDir, Pid: pr.pid, TTY: tty,
		RunAsUser: s.uid, RunAsGroup: s.gid, Groups: s.groups,
		Privileged: s.privileged, CapAdd: s.capAdd, CapDrop: s.capDrop, NoNewPrivs: s.noNewPrivs}
	if pr.cg != nil {
		spec.CgroupDir = pr.cg.dir
	}
	p.mu.Lock()
	if c.image != nil {
		spec.User = c.image.img.Config.Config.User
	}
	p.mu.Unlock()
	return spec
}
