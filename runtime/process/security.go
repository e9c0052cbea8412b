package process

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/shim"
)

// effectiveSecurity is a container's securityContext merged with its
// pod's, as the kubelet merges them: the container's fields win; the
// supplemental groups and fsGroup are the pod's.
type effectiveSecurity struct {
	uid, gid   *int64
	groups     []int64
	nonRoot    bool
	privileged bool
	capAdd     []string
	capDrop    []string
	noNewPrivs bool
}

func securityOf(pod *corev1.Pod, c *corev1.Container) effectiveSecurity {
	var s effectiveSecurity
	s.uid, s.gid, s.groups = securityIDs(pod, c)
	if psc := pod.Spec.SecurityContext; psc != nil && psc.RunAsNonRoot != nil {
		s.nonRoot = *psc.RunAsNonRoot
	}
	sc := c.SecurityContext
	if sc == nil {
		return s
	}
	if sc.RunAsNonRoot != nil {
		s.nonRoot = *sc.RunAsNonRoot
	}
	s.privileged = sc.Privileged != nil && *sc.Privileged
	if sc.Capabilities != nil {
		for _, cp := range sc.Capabilities.Add {
			s.capAdd = append(s.capAdd, string(cp))
		}
		for _, cp := range sc.Capabilities.Drop {
			s.capDrop = append(s.capDrop, string(cp))
		}
	}
	s.noNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	return s
}

// verifyRunAsNonRoot refuses a container that must not run as root and
// would (the host's programs run as root unless runAsUser says otherwise),
// with the kubelet's messages; the container then waits in
// CreateContainerConfigError.
func (p *pod) verifyRunAsNonRoot(c *ctr) error {
	s := securityOf(p.api, c.spec)
	if !s.nonRoot {
		return nil
	}
	switch {
	case s.uid == nil:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", p.podRef(), c.spec.Name)
	case *s.uid == 0:
		return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", p.podRef(), c.spec.Name)
	}
	return nil
}

// hostInitSpec is what the container init runs for a host container: the
// command with its ids and capabilities, in the host's root as the
// container's mount namespace shows it.
func (p *pod) hostInitSpec(c *ctr, argv []string, workDir string) containerinit.Spec {
	s := securityOf(p.api, c.spec)
	return containerinit.Spec{Argv: argv, WorkDir: workDir, RunAsUser: s.uid, RunAsGroup: s.gid, Groups: s.groups,
		Privileged: s.privileged, CapAdd: s.capAdd, CapDrop: s.capDrop, NoNewPrivs: s.noNewPrivs}
}

// selfExe starts the container init: the starting process's own binary,
// which the container's mount namespace may hide (a binary under /tmp is
// behind the private /tmp), but the host's /proc, still mounted when the
// init is exec'd, reaches.
const selfExe = "/proc/self/exe"

// hostInitArgv is the argv of the container init for spec.
func hostInitArgv(spec containerinit.Spec) ([]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("container init spec: %w", err)
	}
	return []string{containerinit.Arg0, string(b)}, nil
}

// credential is the user a plain (not namespaced) container runs as: nil
// when it asks for none, or when this agent is not root and cannot switch.
func credential(pod *corev1.Pod, c *corev1.Container) *syscall.Credential {
	s := securityOf(pod, c)
	if os.Geteuid() != 0 || (s.uid == nil && s.gid == nil && len(s.groups) == 0) {
		return nil
	}
	cred := &syscall.Credential{}
	if s.uid != nil {
		cred.Uid = uint32(*s.uid)
	}
	if s.gid != nil {
		cred.Gid = uint32(*s.gid)
	}
	for _, g := range s.groups {
		cred.Groups = append(cred.Groups, uint32(g))
	}
	return cred
}

// startWithInit turns cmd into the start of the container init (argv in
// spec), started by start (in the container's namespaces), and waits until
// the init has exec'd the command: its error when it could not.
func (p *pod) startWithInit(cmd *exec.Cmd, spec containerinit.Spec, exited <-chan struct{}, start func() error) error {
	argv, err := hostInitArgv(spec)
	if err != nil {
		return err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	cmd.Path, cmd.Args, cmd.Dir = selfExe, argv, "/"
	cmd.ExtraFiles = []*os.File{statusW} // containerinit.StatusFD
	err = start()
	statusW.Close()
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(statusR)
	if len(msg) > 0 {
		<-exited
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// fsUser is the runAsUser every container of the pod shares (the kubelet's
// FsUserFrom): the owner of its projected service-account tokens.
func fsUser(pod *corev1.Pod) *int64 {
	var uid *int64
	first := true
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			u, _, _ := securityIDs(pod, &cs[i])
			switch {
			case first:
				uid, first = u, false
			case (u == nil) != (uid == nil) || (u != nil && *u != *uid):
				return nil
			}
		}
	}
	return uid
}

// fsGroupOf is the pod's fsGroup, nil when unset.
func fsGroupOf(pod *corev1.Pod) *int64 {
	if psc := pod.Spec.SecurityContext; psc != nil {
		return psc.FSGroup
	}
	return nil
}

// setVolumeOwnership gives a volume to the pod's fsGroup as the kubelet's
// SetVolumeOwnership does: every file and directory gets the group, the
// group's read (and, for a writable volume, write) bits, and directories
// the setgid and execute bits, so files made later belong to the group.
func setVolumeOwnership(dir string, fsGroup int64, readOnly bool) error {
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
			return fmt.Errorf("set volume ownership of %s: %w", path, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		return os.Chmod(path, info.Mode()|m)
	})
}

// hiddenPaths are the host paths containers must not see: the runtime's
// root (every pod's files) and Config.HidePaths.
func (r *Runtime) hiddenPaths() []string {
	return append([]string{r.cfg.RootDir}, r.cfg.HidePaths...)
}

// containerNS is the shim.NS of c's namespaces; workDir is kept visible
// when it is the pod's default working directory, under the hidden root.
func (p *pod) containerNS(c *ctr, workDir string) shim.NS {
	ns := shim.NS{Hostname: p.hostname, HostsFile: p.hostsPath(),
		TmpDir: filepath.Join(p.dir, "tmp"), Mounts: p.mounts(c), Hide: p.rt.hiddenPaths()}
	if c.spec.WorkingDir == "" {
		ns.Keep = []string{workDir}
	}
	return ns
}

// idOr is *id, or -1 (chown's "unchanged") when nil.
func idOr(id *int64) int {
	if id == nil {
		return -1
	}
	return int(*id)
}

// applyFSGroup gives the pod's volumes (not host paths) to its fsGroup,
// read-only for those the kubelet mounts read-only (ConfigMap, Secret,
// downward API, projected), and the default working directory to the
// user all its containers run as (batchlet's own: the kubelet has none).
func (p *pod) applyFSGroup() error {
	uid, gid := fsUser(p.api), fsGroupOf(p.api)
	if uid != nil || gid != nil {
		work := filepath.Join(p.dir, "work")
		if err := os.Chown(work, idOr(uid), idOr(gid)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("set the owner of the working directory: %w", err)
		}
	}
	if gid == nil {
		return nil
	}
	for _, v := range p.api.Spec.Volumes {
		if v.HostPath != nil {
			continue
		}
		readOnly := v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
		if err := setVolumeOwnership(p.volumes[v.Name], *gid, readOnly); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
	}
	return nil
}
