package process

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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
// would, or might, with the kubelet's messages; the container then waits in
// CreateContainerConfigError. Without runAsUser, an image container runs
// as its image's user, which must be numeric to be checked (the kubelet
// cannot read the image's /etc/passwd); a host command (img nil) as root.
func (p *pod) verifyRunAsNonRoot(c *ctr, img *containerImage) error {
	s := securityOf(p.api, c.spec)
	if !s.nonRoot {
		return nil
	}
	if s.uid != nil {
		if *s.uid == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", p.podRef(), c.spec.Name)
		}
		return nil
	}
	uid, username := new(int64), ""
	if img != nil {
		uid, username = imageUser(img.img.Config.Config.User)
	}
	if uid == nil {
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, p.podRef(), c.spec.Name)
	}
	if *uid == 0 {
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", p.podRef(), c.spec.Name)
	}
	if errs := validation.IsValidUserID(*uid); len(errs) > 0 {
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
			*uid, math.MaxInt32, strings.Join(errs, "; "), p.podRef(), c.spec.Name)
	}
	return nil
}

// imageUser is the uid of an image config's User ("user" or "user:group",
// as containerd's CRI reads it): numeric, else its name; root (0) when
// empty.
func imageUser(user string) (uid *int64, name string) {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return new(int64), ""
	}
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &n, ""
	}
	return nil, u
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
	hide := []string{r.cfg.RootDir}
	switch {
	case strings.HasPrefix(r.cfg.MemoryDir, memoryBase+"/"):
		// The other runtimes' too.
		hide = append(hide, memoryBase)
	case r.cfg.MemoryDir != "":
		hide = append(hide, r.cfg.MemoryDir)
	}
	return append(hide, r.cfg.HidePaths...)
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
