package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/image"
	"github.com/batchlet/batchlet/runtime/shim"
)

// RuntimeAnnotation selects a pod's runtime ("image" or "process") when its
// spec.runtimeClassName does not.
const RuntimeAnnotation = "batchlet.dev/runtime"

// Runtime names a pod can ask for in runtimeClassName or RuntimeAnnotation.
const (
	RuntimeImage   = "image"
	RuntimeProcess = "process"
)

// runsImages reports whether the pod's containers run from their images:
// its runtimeClassName or RuntimeAnnotation says "image" (or "process"),
// else the runtime's default.
func (p *pod) runsImages() bool {
	if p.rt.cfg.Images == nil {
		return false
	}
	for _, choice := range []string{runtimeClassName(p.api), p.api.Annotations[RuntimeAnnotation]} {
		switch choice {
		case RuntimeImage:
			return true
		case RuntimeProcess:
			return false
		}
	}
	return p.rt.cfg.ImagesByDefault
}

func runtimeClassName(pod *corev1.Pod) string {
	if pod.Spec.RuntimeClassName == nil {
		return ""
	}
	return *pod.Spec.RuntimeClassName
}

// containerImage is what an attempt of an image container runs in.
type containerImage struct {
	img *image.Image
	// lower are the unpacked layers, bottom first.
	lower []string
	// dir holds the attempt's upper, work and merged directories.
	dir string
}

// imageReporter shows a container's image progress in its status.
type imageReporter struct {
	p *pod
	c *ctr
}

func (r imageReporter) Event(eventType, reason, msg string) {
	r.p.rt.event(r.p.api, r.c.spec, r.c.init, eventType, reason, msg)
}

func (r imageReporter) Waiting(reason, msg string) {
	r.p.mu.Lock()
	if r.c.st.State.Terminated != nil {
		r.c.st.LastTerminationState = r.c.st.State
	}
	r.c.st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	r.p.mu.Unlock()
	r.p.notify()
}

func (r imageReporter) Sleep(d time.Duration) bool { return r.p.sleep(d) }

// ensureImage makes c's image present and unpacked for attempt n; false
// when the pod was stopped first. Its layers stay in use until the pod is
// cleaned up.
func (p *pod) ensureImage(c *ctr, n int) (*containerImage, bool) {
	secrets := func(ctx context.Context, ns, name string) (*corev1.Secret, error) { return p.res.Secret(ctx, ns, name) }
	rep := imageReporter{p: p, c: c}
	for {
		img, ok := p.rt.cfg.Images.Ensure(context.Background(), p.api, c.spec, secrets, rep)
		if !ok {
			return nil, false
		}
		store := p.rt.cfg.Images.Store()
		store.Acquire(img.Layers)
		p.mu.Lock()
		p.imageLayers = append(p.imageLayers, img.Layers)
		p.mu.Unlock()
		lower, err := store.Unpack(img)
		if err == nil {
			dir := filepath.Join(p.dir, "rootfs", c.spec.Name+"."+strconv.Itoa(n))
			if n > 0 {
				// Only the last attempt's file system is kept.
				_ = os.RemoveAll(filepath.Join(p.dir, "rootfs", c.spec.Name+"."+strconv.Itoa(n-1)))
			}
			return &containerImage{img: img, lower: lower, dir: dir}, true
		}
		msg := fmt.Sprintf("failed to unpack image %q: %v", c.spec.Image, err)
		rep.Event(corev1.EventTypeWarning, "Failed", msg)
		rep.Waiting("ErrImagePull", msg)
		if !p.sleep(setupRetry) {
			return nil, false
		}
	}
}

// holdAdoptedImage keeps the layers of an adopted image container (its
// overlay's lower directories) from garbage collection while the pod
// lives, as ensureImage does for the containers this agent starts.
func (p *pod) holdAdoptedImage(spec shim.Spec) {
	if p.rt.cfg.Images == nil || len(spec.ImageLayers) == 0 {
		return
	}
	layers := make([]v1.Hash, 0, len(spec.ImageLayers))
	for _, l := range spec.ImageLayers {
		h, err := v1.NewHash(l)
		if err != nil {
			return
		}
		layers = append(layers, h)
	}
	p.rt.cfg.Images.Store().Acquire(layers)
	p.mu.Lock()
	p.imageLayers = append(p.imageLayers, layers)
	p.mu.Unlock()
}

// releaseImages ends the pod's use of its images' layers.
func (p *pod) releaseImages() {
	p.mu.Lock()
	layers := p.imageLayers
	p.imageLayers = nil
	p.mu.Unlock()
	if len(layers) == 0 {
		return
	}
	store := p.rt.cfg.Images.Store()
	for _, l := range layers {
		store.Release(l)
	}
	if _, err := store.GC(); err != nil {
		p.rt.log.Info("image garbage collection failed", "err", err.Error())
	}
}

// imageCommand merges the image config with the container spec as the
// kubelet and containerd do: command replaces the Entrypoint and drops the
// Cmd, args replace the Cmd; the image's Env comes first and the spec's
// variables override it; workingDir defaults to the image's, then "/".
// command and args were expanded against the spec's environment.
func imageCommand(spec *corev1.Container, cfg v1.Config, command, args []string, env []envVar) (argv []string, merged []envVar, workDir string) {
	switch {
	case len(spec.Command) > 0:
		argv = append(command, args...)
	case len(spec.Args) > 0:
		argv = append(append([]string{}, cfg.Entrypoint...), args...)
	default:
		argv = append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...)
	}
	merged = mergeImageEnv(spec, cfg.Env, env)
	workDir = spec.WorkingDir
	if workDir == "" {
		workDir = cfg.WorkingDir
	}
	if workDir == "" {
		workDir = "/"
	}
	return argv, merged, workDir
}

// mergeImageEnv puts the image's variables first; the container's replace
// them, except the defaults the process runtime adds (PATH, HOME) when the
// image sets those.
func mergeImageEnv(spec *corev1.Container, imageEnv []string, env []envVar) []envVar {
	declared := map[string]bool{}
	for _, e := range spec.Env {
		declared[e.Name] = true
	}
	var out []envVar
	index := map[string]int{}
	for _, kv := range imageEnv {
		k, v, _ := strings.Cut(kv, "=")
		if i, ok := index[k]; ok {
			out[i].value = v
			continue
		}
		index[k] = len(out)
		out = append(out, envVar{k, v})
	}
	for _, e := range env {
		i, ok := index[e.name]
		switch {
		case !ok:
			index[e.name] = len(out)
			out = append(out, e)
		case declared[e.name] || (e.name != "PATH" && e.name != "HOME"):
			out[i].value = e.value
		}
	}
	return out
}

// securityIDs returns the securityContext's runAsUser, runAsGroup and the
// pod's supplemental groups and fsGroup.
func securityIDs(pod *corev1.Pod, c *corev1.Container) (uid, gid *int64, groups []int64) {
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
		groups = append(groups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	return uid, gid, groups
}

// setupImages prepares the image runtime when configured: this process
// holds the store's layers, and overlayfs is probed once.
func (r *Runtime) setupImages() error {
	if r.cfg.Images == nil {
		return nil
	}
	if err := r.cfg.Images.Store().HoldLayers(); err != nil {
		return err
	}
	switch r.cfg.ImageRootfs {
	case "", "overlay":
		if err := probeOverlay(r.cfg.RootDir); err != nil {
			r.imageCopy = true
			r.log.Info("image containers get a copy of their layers: overlayfs is unavailable", "reason", err.Error())
		}
	case "copy":
		r.imageCopy = true
	default:
		return fmt.Errorf("image rootfs %q: want overlay or copy", r.cfg.ImageRootfs)
	}
	return nil
}

// probeOverlay mounts a small overlay in a mount namespace of its own.
func probeOverlay(root string) error {
	dir, err := os.MkdirTemp(root, ".overlay-probe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	done := make(chan error, 1)
	shim.OnThreadOfItsOwn(func() {
		if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- err
			return
		}
		done <- unix.Mount("overlay", filepath.Join(dir, "merged"), "overlay", 0,
			containerinit.OverlayOptions([]string{filepath.Join(dir, "lower")}, filepath.Join(dir, "upper"), filepath.Join(dir, "work")))
	})
	return <-done
}

// imageID is a container status's imageID: the image as the spec names it
// for the process runtime, its repository digest for the image runtime
// (as containerd reports it: registry/repository@sha256:…, Docker Hub's
// registry named docker.io).
func imageID(spec *corev1.Container, ci *containerImage) string {
	if ci == nil {
		return spec.Image
	}
	repo := ci.img.Ref
	if ref, err := image.ParseReference(spec.Image); err == nil {
		repo = ref.Context().Name()
		if ref.Context().RegistryStr() == "index.docker.io" {
			repo = "docker.io/" + ref.Context().RepositoryStr()
		}
	}
	return repo + "@" + ci.img.Digest.String()
}

// ImageOptions configure the image runtime of a process runtime.
type ImageOptions struct {
	// Dir is the image store's directory (<data-dir>/images).
	Dir string
	// ByDefault runs every pod from its image unless it asks for the
	// process runtime (batchlet server --runtime=image).
	ByDefault bool
	// Mirrors are "registry=mirror" pairs (see image.ParseMirrors).
	Mirrors []string
	// DockerConfig is a docker config.json with registry credentials.
	DockerConfig string
	// Rootfs is "overlay" (default) or "copy".
	Rootfs string
}

// WithImages sets cfg up to run pods from their images: those that ask
// for it, or all with o.ByDefault.
func WithImages(cfg *Config, o ImageOptions) error {
	mirrors, err := image.ParseMirrors(o.Mirrors)
	if err != nil {
		return err
	}
	store, err := image.Open(o.Dir)
	if err != nil {
		return err
	}
	puller, err := image.NewPuller(image.PullerConfig{Store: store, Clock: cfg.Clock, Mirrors: mirrors, DockerConfig: o.DockerConfig})
	if err != nil {
		return err
	}
	cfg.Images, cfg.ImagesByDefault, cfg.ImageRootfs = puller, o.ByDefault, o.Rootfs
	return nil
}
