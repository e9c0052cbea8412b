package process

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/containerinit"
	"github.com/batchlet/batchlet/runtime/image"
	"github.com/batchlet/batchlet/runtime/shim"
)

// Config configures the process runtime.
type Config struct {
	// RootDir holds one directory per pod.
	RootDir string
	// Clock times back-offs and stamps statuses; defaults to the real clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Events receives container events; may be nil.
	Events runtime.EventRecorder
	// DisableNamespaces forces plain processes even when namespaces work.
	DisableNamespaces bool
	// DisableCgroups skips cgroup limits even when cgroup v2 is writable.
	DisableCgroups bool
	// Images, when set, runs containers in their images' root file systems
	// (the image runtime, image.go): those of pods that ask for it, or of
	// every pod with ImagesByDefault.
	Images          *image.Puller
	ImagesByDefault bool
	// ImageRootfs is "overlay" (the default; a copy where the kernel
	// refuses overlayfs) or "copy".
	ImageRootfs string
	// NoShims has the agent start containers (host and image) itself:
	// they die with it, and a restarted agent counts them as
	// lost. For a throwaway data dir that nothing would adopt them from; it
	// saves one exec per container. By default each container has a shim
	// and outlives the agent.
	NoShims bool
	// HidePaths are host paths containers must not see besides RootDir:
	// the data dir with the store and credentials, a kubeconfig. In
	// namespaced containers each is covered with an empty read-only tmpfs
	// (/dev/null for a file).
	HidePaths []string
	// ShimBinary is the binary shims and container inits run; empty: the
	// batchlet-shim beside the agent's executable when it comes from the
	// same build (ShimBinaryName), else the agent's own binary.
	ShimBinary string
	// ShimSupervisor has one long-lived shim per node (the supervisor,
	// runtime/shim) serve every container in place of a shim process per
	// container: one Go process start less per container (batchlet
	// server's and agent's default, --shim-supervisor); ignored with
	// NoShims.
	ShimSupervisor bool
	// MemoryDir, when set, holds the pods' projected and Secret volumes
	// (every pod's service-account token among them), which the kubelet
	// keeps on a tmpfs: never on disk, and without the cost of inode
	// allocations on a disk file system (see DefaultMemoryDir). Empty:
	// they are in the pods' directories.
	MemoryDir string
}

// Runtime runs pods as host processes. Create it with New.
type Runtime struct {
	cfg        Config
	clock      clock.Clock
	log        *slog.Logger
	namespaces bool
	cgroups    *cgroupRoot
	// imageCopy: image containers get a copy of their layers, not an
	// overlay mount.
	imageCopy bool
	// devNull is the stdin of containers that ask for none, shared.
	devNull *os.File
	// lineReaders holds the line buffers of finished log copies.
	lineReaders sync.Pool
	// helper is the binary shims (and, without shims, container inits)
	// run: batchlet-shim or the agent's own (helperBinary), by a path that
	// reaches the file chosen at start-up even once it was replaced or
	// removed on disk (an upgrade in place): /proc/self/exe, or
	// /proc/self/fd/N of helperFile, kept open.
	helper     string
	helperFile *os.File
	// files writes the pods' set-up files.
	files fileWriter
	// legacyPods are the pods whose directories an earlier version made
	// directly in the RootDir; read-only after New.
	legacyPods map[types.UID]bool
	// shards makes the RootDir's shard directories (podShardCount).
	shards shardDirs
	// spares are emptied pod directories for new pods; nil when the pool
	// could not be made.
	spares *spareDirs
	// removals counts the removed pods whose directories are still being
	// cleaned up (RemovePod), so waitRemovals can wait for them.
	removals sync.WaitGroup

	// supervisor, when set, serves the containers in place of their own
	// shims (Config.ShimSupervisor).
	supervisor *supervisorClient
	// teeBuffers are the read buffers of the containers' output copies
	// (shimPipes.tee): two per running container, reused rather than
	// allocated per container.
	teeBuffers teeBufferPool

	mu   sync.Mutex
	pods map[types.UID]*pod
	subs []func(types.UID)
}

var _ runtime.Runtime = (*Runtime)(nil)

// New creates the root dir, probes namespaces and cgroups once, and returns
// the runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.RootDir == "" {
		return nil, fmt.Errorf("process runtime: RootDir is required")
	}
	// Shims work from / and read the paths of their specs from there.
	root, err := filepath.Abs(cfg.RootDir)
	if err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	cfg.RootDir = root
	for i, h := range cfg.HidePaths {
		if abs, err := filepath.Abs(h); err == nil {
			cfg.HidePaths[i] = abs
		}
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("create runtime root %s: %w", cfg.RootDir, err)
	}
	if cfg.MemoryDir != "" {
		if cfg.MemoryDir, err = filepath.Abs(cfg.MemoryDir); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
		if err := makeMemoryDir(cfg.MemoryDir, cfg.RootDir); err != nil {
			return nil, err
		}
	}
	spreadPodDirs(cfg.RootDir)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("process runtime: find the batchlet binary for container shims: %w", err)
	}
	r := &Runtime{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, pods: map[types.UID]*pod{}, devNull: devNull,
		files: newFileWriter()}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.legacyPods, err = legacyPodDirs(cfg.RootDir); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	r.openHelper(self)
	spares := newSpareDirs(cfg.RootDir)
	if err := spares.reset(); err != nil {
		r.log.Info("each pod directory is made anew: no pool of spare ones", "err", err.Error())
	} else {
		r.spares = spares
	}
	if cfg.ShimSupervisor && !cfg.NoShims {
		if r.supervisor, err = newSupervisorClient(root, r.helper, r.log); err != nil {
			r.log.Warn("each container gets a shim of its own", "reason", err.Error())
		}
	}
	if !cfg.DisableNamespaces {
		if err := probeNamespaces(r.helper); err != nil {
			r.log.Warn("pods run as plain process groups without isolation: Linux namespaces are unavailable, so pods see the host's files (the data dir and its credentials too), its /proc and its /dev, share its hostname and keep every capability of their user", "reason", err.Error())
		} else {
			r.namespaces = true
		}
	}
	if err := r.setupImages(); err != nil {
		return nil, err
	}
	if !cfg.DisableCgroups {
		cg, err := newCgroupRoot(r.log)
		if err != nil {
			r.log.Info("memory and cpu limits are not enforced: cgroup v2 is unavailable", "reason", err.Error())
		} else {
			r.cgroups = cg
		}
	}
	return r, nil
}

// Namespaces reports whether pods get their own namespaces.
func (r *Runtime) Namespaces() bool { return r.namespaces }

// probeNamespaces checks that a container can start in its own
// namespaces, as the container init makes them, and that exec can join
// them.
func probeNamespaces(initBinary string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root")
	}
	if _, err := os.Stat(shim.NsenterBin); err != nil {
		return fmt.Errorf("exec needs %s: %w", shim.NsenterBin, err)
	}
	if err := os.MkdirAll(containerinit.HostTmp, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", containerinit.HostTmp, err)
	}
	var out bytes.Buffer
	cmd := &exec.Cmd{Stdout: &out, Stderr: &out}
	exited := make(chan struct{})
	spec := containerinit.Spec{Hostname: "probe", Argv: []string{"/bin/true"}, WorkDir: "/",
		Mounts: []containerinit.Mount{{Source: "/etc/hosts", Target: "/etc/hosts"}}}
	if err := startInit(cmd, initBinary, spec, exited); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	<-exited
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("namespaces: %s: %s", cmd.ProcessState, out.Bytes())
	}
	return nil
}

// StartPod implements runtime.Runtime.
func (r *Runtime) StartPod(ctx context.Context, apiPod *corev1.Pod, res runtime.Resolver) error {
	r.mu.Lock()
	if _, ok := r.pods[apiPod.UID]; ok {
		r.mu.Unlock()
		return nil
	}
	p := newPod(r, apiPod.DeepCopy(), res)
	r.pods[apiPod.UID] = p
	r.mu.Unlock()
	go p.run()
	return nil
}

func (r *Runtime) get(uid types.UID) (*pod, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pods[uid]
	return p, ok
}

// KillPod implements runtime.Runtime.
func (r *Runtime) KillPod(ctx context.Context, uid types.UID, grace time.Duration) error {
	p, ok := r.get(uid)
	if !ok {
		return nil
	}
	p.kill(grace)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill pod %s: %w", uid, ctx.Err())
	}
}

// PodStatus implements runtime.Runtime.
func (r *Runtime) PodStatus(uid types.UID) (runtime.PodStatus, bool) {
	p, ok := r.get(uid)
	if !ok {
		return runtime.PodStatus{}, false
	}
	return p.status(), true
}

// RemovePod implements runtime.Runtime.
func (r *Runtime) RemovePod(uid types.UID) {
	r.mu.Lock()
	p, ok := r.pods[uid]
	delete(r.pods, uid)
	r.mu.Unlock()
	if !ok {
		return
	}
	p.kill(0)
	r.removals.Go(func() {
		<-p.done
		p.cleanup()
	})
}

// waitRemovals waits until every removed pod's directory is cleaned up:
// emptied into a spare or removed.
func (r *Runtime) waitRemovals() { r.removals.Wait() }

// Subscribe implements runtime.Runtime.
func (r *Runtime) Subscribe(fn func(types.UID)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, fn)
}

func (r *Runtime) notify(uid types.UID) {
	r.mu.Lock()
	subs := r.subs
	r.mu.Unlock()
	for _, fn := range subs {
		fn(uid)
	}
}

func (r *Runtime) event(p *corev1.Pod, c *corev1.Container, init bool, eventType, reason, msg string) {
	if r.cfg.Events == nil {
		return
	}
	field := "spec.containers{" + c.Name + "}"
	if init {
		field = "spec.initContainers{" + c.Name + "}"
	}
	r.cfg.Events(p, field, eventType, reason, msg)
}

// Logs implements runtime.Runtime. A pod that ended before this runtime
// started (a restarted server) is not running here, but its logs are still
// in its directory: they are read from there, as the kubelet reads a
// finished container's log file.
func (r *Runtime) Logs(ctx context.Context, uid types.UID, container string, opts runtime.LogOptions, w io.Writer) error {
	p, ok := r.get(uid)
	if !ok {
		return r.logsOnDisk(ctx, uid, container, opts, w)
	}
	return p.logs(ctx, container, opts, w)
}

// logsOnDisk writes the log of the last (or, with opts.Previous, the one
// before the last) attempt of container recorded in the pod's directory.
func (r *Runtime) logsOnDisk(ctx context.Context, uid types.UID, container string, opts runtime.LogOptions, w io.Writer) error {
	last := -1
	paths, _ := filepath.Glob(filepath.Join(r.podDir(uid), container+".*.log"))
	for _, path := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), container+"."), ".log"))
		if err == nil && n > last {
			last = n
		}
	}
	if opts.Previous {
		if last < 1 {
			return runtime.NotFoundf("previous terminated container %q not found", container)
		}
		last--
	}
	if last < 0 {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	opts.Follow = false
	path := filepath.Join(r.podDir(uid), container+"."+strconv.Itoa(last)+".log")
	return readLog(ctx, path, opts, func() bool { return true }, w)
}

// Exec implements runtime.Runtime.
func (r *Runtime) Exec(ctx context.Context, uid types.UID, container string, cmd []string, s runtime.ExecStreams) error {
	p, ok := r.get(uid)
	if !ok {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	return p.exec(ctx, container, cmd, s)
}

// podDir is the directory of the pod uid: RootDir/<shard>/<uid>, or
// RootDir/<uid> for a pod an earlier version made (legacyPodDirs).
func (r *Runtime) podDir(uid types.UID) string {
	if r.legacyPods[uid] {
		return filepath.Join(r.cfg.RootDir, string(uid))
	}
	return filepath.Join(r.cfg.RootDir, shardName(shardIndex(uid)), string(uid))
}

// makePodShard makes the shard directory of the pod uid's directory dir
// (podDir's) when it is missing.
func (r *Runtime) makePodShard(uid types.UID, dir string) error {
	if r.legacyPods[uid] {
		return nil
	}
	return r.shards.ensure(shardIndex(uid), dir)
}

// podMemoryDir is the directory of the pod's volumes in MemoryDir; "" when
// there is none.
func (r *Runtime) podMemoryDir(uid types.UID) string {
	if r.cfg.MemoryDir == "" {
		return ""
	}
	return filepath.Join(r.cfg.MemoryDir, string(uid))
}

// SetEventRecorder replaces the event recorder; call it before starting
// pods (the agent does so in agent.New).
func (r *Runtime) SetEventRecorder(rec runtime.EventRecorder) { r.cfg.Events = rec }

// RefreshHosts rewrites a running pod's /etc/hosts from its Resolver.
func (r *Runtime) RefreshHosts(uid types.UID) error {
	p, ok := r.get(uid)
	if !ok {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	return p.refreshHosts()
}

// fsTopdirFlag is FS_TOPDIR_FL of linux/fs.h (chattr +T).
const fsTopdirFlag = 0x00020000

// spreadPodDirs marks root as the top of unrelated directory hierarchies
// (chattr +T), which ext4's allocator takes as a hint to spread the pod
// directories' shards (podShardCount), and so the pods, over its block
// groups instead of packing them into the root's. Without a journal, ext4
// scans a group's recently deleted inodes on every inode it allocates
// there, so packed pods pay for every pod deleted in the last minutes;
// spread, each group holds few of them. Filesystems without the flag
// refuse it, which changes nothing.
func spreadPodDirs(root string) {
	f, err := os.Open(root)
	if err != nil {
		return
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || flags&fsTopdirFlag != 0 {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFlag))
}
