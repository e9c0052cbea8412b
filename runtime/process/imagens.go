package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// initSpec is the container init's spec for running argv in c's image
// with workDir (both seen from the container): the root it builds and the
// command. Without overlayfs, the layers are copied into the attempt's
// merged/ first, here in the host's mount namespace.
func (p *pod) initSpec(c *ctr, ci *containerImage, argv []string, workDir string) (containerinit.Spec, error) {
	hostnameFile := filepath.Join(p.dir, "hostname")
	if err := os.WriteFile(hostnameFile, []byte(p.hostname+"\n"), 0o644); err != nil {
		return containerinit.Spec{}, fmt.Errorf("write hostname: %w", err)
	}
	merged := filepath.Join(ci.dir, "merged")
	if p.rt.imageCopy {
		if err := os.MkdirAll(merged, 0o755); err != nil {
			return containerinit.Spec{}, fmt.Errorf("create rootfs: %w", err)
		}
		if err := copyLayers(ci.lower, merged); err != nil {
			return containerinit.Spec{}, fmt.Errorf("copy the image's layers: %w", err)
		}
	}
	mounts := []containerinit.Mount{{Source: p.hostsPath(), Target: "/etc/hosts"}, {Source: hostnameFile, Target: "/etc/hostname"}}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		mounts = append(mounts, containerinit.Mount{Source: "/etc/resolv.conf", Target: "/etc/resolv.conf", ReadOnly: true})
	}
	for _, m := range p.mounts(c) {
		mounts = append(mounts, containerinit.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	uid, gid, groups := securityIDs(p.api, c.spec)
	return containerinit.Spec{Rootfs: merged, Dir: ci.dir, Lower: ci.lower, Copied: p.rt.imageCopy,
		Hostname: p.hostname, Mounts: mounts, Argv: argv, WorkDir: workDir,
		User: ci.img.Config.Config.User, RunAsUser: uid, RunAsGroup: gid, Groups: groups}, nil
}

// initArgv is the argv of the container init that runs spec (the binary
// is the agent's own: Runtime.self).
func initArgv(spec containerinit.Spec) ([]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("container init spec: %w", err)
	}
	return []string{containerinit.Arg0, string(b)}, nil
}

// startInImage starts pr.cmd (argv, env, working directory seen from the
// container) in c's image without a shim (Config.NoShims): the container
// init, started on a thread of its own as PID 1 of new PID, mount and UTS
// namespaces, builds the root, pivot_roots, takes the user and execs the
// command. It returns once the command runs, or with the init's error when
// it could not start it.
func (p *pod) startInImage(pr *proc, c *ctr, ci *containerImage) error {
	cmd := pr.cmd
	spec, err := p.initSpec(c, ci, cmd.Args, cmd.Dir)
	if err != nil {
		return err
	}
	args, err := initArgv(spec)
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args, cmd.Dir = p.rt.self, args, "/"
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	cmd.ExtraFiles = []*os.File{statusW} // containerinit.StatusFD
	started := make(chan error, 1)
	shim.OnThreadOfItsOwn(func() {
		cmd.SysProcAttr.Cloneflags |= shim.InitCloneflags
		cmd.SysProcAttr.Setsid = true
		// Sent when this thread ends: once the container was waited for,
		// or when the agent dies.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(pr.exited)
	})
	err = <-started
	statusW.Close()
	if err != nil {
		return err
	}
	// EOF once the init exec'd the command (the pipe is close-on-exec
	// there) or died; anything written is why it could not start it.
	msg, _ := io.ReadAll(statusR)
	if len(msg) > 0 {
		<-pr.exited
		return errors.New(string(msg))
	}
	return nil
}
