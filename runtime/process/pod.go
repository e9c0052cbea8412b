package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime"
)

// setupRetry is how long a container waits before retrying a failed
// configuration (an env var from a missing ConfigMap or Secret).
const setupRetry = 10 * time.Second

// Volume set-up retries back off as the kubelet's volume operations do:
// 500 ms, doubling, at most 2m2s. A pod created right after its namespace
// (batchlet run, a test) may find kube-root-ca.crt not yet published for
// its service-account volume; it mounts as soon as it is.
const (
	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 2*time.Minute + 2*time.Second
)

// nextMountRetry is the wait after one that was d (0: the first).
func nextMountRetry(d time.Duration) time.Duration {
	if d == 0 {
		return mountRetryInitial
	}
	return min(2*d, mountRetryMax)
}

// pod is one started pod and the goroutine that drives its containers.
type pod struct {
	rt       *Runtime
	api      *corev1.Pod
	res      runtime.Resolver
	dir      string
	hostname string
	volumes  map[string]string

	mu       sync.Mutex
	init     []*ctr
	ctrs     []*ctr
	killed   bool
	killCh   chan struct{}
	finished bool
	done     chan struct{}
	// imageLayers are the layers the pod's image containers use.
	imageLayers [][]v1.Hash
	// tokens caches the pod's service-account tokens (tokenResolver).
	tokens *tokenCache
	// hosts is the path of the pod's /etc/hosts, chosen once (hostsPath).
	hosts     string
	hostsOnce sync.Once
	// setUpBefore is set once setup ran (only run calls it).
	setUpBefore bool
}

func newPod(rt *Runtime, api *corev1.Pod, res runtime.Resolver) *pod {
	p := &pod{rt: rt, api: api, res: res, dir: rt.podDir(api.UID), hostname: podHostname(api),
		killCh: make(chan struct{}), done: make(chan struct{})}
	waiting := "ContainerCreating"
	if len(api.Spec.InitContainers) > 0 {
		waiting = "PodInitializing"
	}
	for i := range api.Spec.InitContainers {
		c := newCtr(&api.Spec.InitContainers[i], true, waiting)
		c.resumeFrom(api.Status.InitContainerStatuses)
		p.init = append(p.init, c)
	}
	for i := range api.Spec.Containers {
		c := newCtr(&api.Spec.Containers[i], false, waiting)
		c.resumeFrom(api.Status.ContainerStatuses)
		p.ctrs = append(p.ctrs, c)
	}
	return p
}

// hasWork reports whether a resumed pod has a container left to run: one
// not done, and not behind an init container that failed.
func (p *pod) hasWork() bool {
	for _, c := range p.init {
		if !c.done {
			return true
		}
		if c.exitCode() != 0 {
			return false
		}
	}
	for _, c := range p.ctrs {
		if !c.done {
			return true
		}
	}
	return false
}

// podRef is the kubelet's format.Pod: name_namespace(uid).
func (p *pod) podRef() string {
	return fmt.Sprintf("%s_%s(%s)", p.api.Name, p.api.Namespace, p.api.UID)
}

func (p *pod) notify() { p.rt.notify(p.api.UID) }

func (p *pod) isKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// sleep waits d on the runtime clock; false when the pod was killed.
func (p *pod) sleep(d time.Duration) bool {
	if d <= 0 {
		return !p.isKilled()
	}
	t := p.rt.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return !p.isKilled()
	case <-p.killCh:
		return false
	}
}

// run drives the pod to its end: set-up, init containers in order, then the
// containers side by side.
func (p *pod) run() {
	defer func() {
		p.mu.Lock()
		p.finished = true
		p.mu.Unlock()
		close(p.done)
		p.notify()
	}()
	if !p.hasWork() {
		return
	}
	var wait time.Duration
	for {
		err := p.setup()
		if err == nil {
			break
		}
		p.rt.log.Info("pod set-up failed", "namespace", p.api.Namespace, "name", p.api.Name, "err", err.Error())
		if p.rt.cfg.Events != nil {
			p.rt.cfg.Events(p.api, "", corev1.EventTypeWarning, "FailedMount", err.Error())
		}
		p.notify()
		wait = nextMountRetry(wait)
		if !p.sleep(wait) {
			return
		}
	}
	p.refreshTokens()
	for _, c := range p.init {
		if c.done {
			continue
		}
		if !p.runContainer(c) {
			return
		}
	}
	var todo []*ctr
	for _, c := range p.ctrs {
		if !c.done {
			todo = append(todo, c)
		}
	}
	if len(todo) == 1 {
		// Most pods of a batch have one container: it runs on this
		// goroutine rather than one more per pod.
		p.runContainer(todo[0])
		return
	}
	var wg sync.WaitGroup
	for _, c := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.runContainer(c)
		}()
	}
	wg.Wait()
}

// setup makes what the pod's containers need on disk: its directory, the
// private /tmp and /etc/hosts of namespaced containers, the default working
// directory when a container has none, and the volumes. Every directory or
// file made is an inode allocation, which some filesystems make costly (on
// ext4 without a journal it scans past recently deleted inodes), so setup
// makes nothing the pod does not use and stats nothing first; the log files
// come with each attempt (createLog).
func (p *pod) setup() error {
	if err := p.rt.makePodShard(p.api.UID, p.dir); err != nil {
		return err
	}
	made, haveTmp, haveWork := p.takeSpareDir()
	if !made {
		if err := makeDir(p.dir, 0o755); err != nil {
			return fmt.Errorf("create pod dir: %w", err)
		}
	}
	if p.rt.namespaces && !haveTmp {
		tmp := filepath.Join(p.dir, "tmp")
		if err := makeDir(tmp, podTmpMode); err != nil {
			return fmt.Errorf("create pod dir: %w", err)
		}
		// The umask took the write bits of group and others.
		if !p.rt.files.keepsMode(podTmpMode) {
			_ = os.Chmod(tmp, podTmpMode)
		}
	}
	if p.needsWorkDir() && !haveWork {
		if err := makeDir(filepath.Join(p.dir, "work"), 0o755); err != nil {
			return fmt.Errorf("create pod dir: %w", err)
		}
	}
	if err := p.setupVolumes(context.Background()); err != nil {
		return err
	}
	if !p.rt.namespaces {
		// Only namespaced containers see the pod's /etc/hosts.
		return nil
	}
	if err := p.writeHosts(); err != nil {
		return fmt.Errorf("write hosts: %w", err)
	}
	return nil
}

// takeSpareDir makes the pod's directory from a spare (spareDirs) on its
// first set-up: made reports whether it did, tmp and work which of those
// directories the spare brought. Adopted pods keep the directory they
// have.
func (p *pod) takeSpareDir() (made, tmp, work bool) {
	if p.setUpBefore || p.rt.spares == nil || p.adopted() {
		return false, false, false
	}
	p.setUpBefore = true
	return p.rt.spares.take(p.dir)
}

// writeHosts writes the pod's /etc/hosts, making its directory in the
// MemoryDir when no volume made it.
func (p *pod) writeHosts() error {
	path := p.hostsPath()
	data := hostsFile(p.api, p.hostname, p.res.Hosts(p.api))
	err := p.rt.files.writeFile(path, data, 0o644)
	if errors.Is(err, fs.ErrNotExist) && filepath.Dir(path) != p.dir {
		if err := makeDir(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		err = p.rt.files.writeFile(path, data, 0o644)
	}
	return err
}

// setupVolumes makes the pod's volumes in its directory and gives them to
// its fsGroup.
func (p *pod) setupVolumes(ctx context.Context) error {
	vols, err := materializeVolumes(ctx, p.rt.files, p.api, p.volumeDirs(), p.tokenResolver())
	if err != nil {
		return err
	}
	p.volumes = vols
	return p.applyFSGroup()
}

// volumeDirs is where the pod's volumes go: in its directory, but those
// the kubelet keeps in memory in the runtime's MemoryDir, unless a
// container adopted from an earlier agent runs with them in the pod's
// directory (its bind mounts stay there, and so must refreshed tokens).
func (p *pod) volumeDirs() volumeDirs {
	d := volumeDirs{disk: p.dir, memory: p.rt.podMemoryDir(p.api.UID)}
	if d.memory != "" && p.adopted() {
		if _, err := os.Stat(filepath.Join(p.dir, "volumes")); err == nil {
			d.memory = ""
		}
	}
	return d
}

// adopted reports whether one of the pod's containers was adopted from an
// earlier agent.
func (p *pod) adopted() bool {
	for _, cs := range [][]*ctr{p.init, p.ctrs} {
		for _, c := range cs {
			if c.adopt != nil {
				return true
			}
		}
	}
	return false
}

// makeDir makes dir, which may exist already (a resumed pod, a retried
// set-up); its parents are made only when missing.
// podTmpMode is a pod's private /tmp: everyone writes, only owners delete
// (os.FileMode's sticky bit is os.ModeSticky, not the raw 0o1000).
const podTmpMode = 0o777 | os.ModeSticky

func makeDir(dir string, perm os.FileMode) error {
	err := os.Mkdir(dir, perm)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, perm)
	}
	return err
}

// needsWorkDir reports whether a container works in the pod's default
// working directory.
func (p *pod) needsWorkDir() bool {
	for _, cs := range [][]corev1.Container{p.api.Spec.InitContainers, p.api.Spec.Containers} {
		for i := range cs {
			if cs[i].WorkingDir == "" {
				return true
			}
		}
	}
	return false
}

// hostsPath is the pod's /etc/hosts: in its directory in the MemoryDir
// (a tmpfs file, where an ext4 one is an inode allocation per pod; the
// kubelet keeps its etc-hosts on disk, no container sees the difference),
// else in its directory. A container adopted from an earlier agent that
// kept it in the pod's directory has it bound from there, so it stays
// there (RefreshHosts rewrites it in place).
func (p *pod) hostsPath() string {
	p.hostsOnce.Do(func() {
		p.hosts = filepath.Join(p.dir, "hosts")
		memory := p.rt.podMemoryDir(p.api.UID)
		if memory == "" {
			return
		}
		if p.adopted() {
			if _, err := os.Stat(p.hosts); err == nil {
				return
			}
		}
		p.hosts = filepath.Join(memory, "hosts")
	})
	return p.hosts
}

// refreshHosts rewrites the /etc/hosts of namespaced containers in place
// (the bind mount follows); plain processes have none.
func (p *pod) refreshHosts() error {
	if !p.rt.namespaces {
		return nil
	}
	f, err := os.OpenFile(p.hostsPath(), os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open hosts: %w", err)
	}
	defer f.Close()
	_, err = f.Write(hostsFile(p.api, p.hostname, p.res.Hosts(p.api)))
	return err
}

// runContainer runs attempts of c as the restart policy says; true when c
// ended successfully (what init containers need to go on).
func (p *pod) runContainer(c *ctr) bool {
	policy := string(p.api.Spec.RestartPolicy)
	for attempt := c.first; ; attempt++ {
		if p.isKilled() {
			return false
		}
		var code int32
		var ran time.Duration
		var ok bool
		if a := c.adopt; a != nil && a.n == attempt {
			c.adopt = nil
			code, ran, ok = p.resumeAttempt(c, a)
		} else {
			code, ran, ok = p.attempt(c, attempt)
		}
		if !ok {
			return false
		}
		restart := shouldRestart(policy, code)
		if c.init {
			restart = code != 0 && policy != string(corev1.RestartPolicyNever)
		}
		if !restart || p.isKilled() {
			return code == 0
		}
		delay, next := restartDelay(c.backoff, ran)
		c.backoff = next
		if delay > 0 {
			p.backOff(c, delay)
			if !p.sleep(delay) {
				return false
			}
		}
	}
}

// backOff shows CrashLoopBackOff while c waits to restart.
func (p *pod) backOff(c *ctr, delay time.Duration) {
	p.mu.Lock()
	c.st.LastTerminationState = c.st.State
	c.st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason:  "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.spec.Name, p.podRef()),
	}}
	c.st.Ready = false
	c.st.Started = ptrBool(false)
	p.mu.Unlock()
	p.rt.event(p.api, c.spec, c.init, corev1.EventTypeWarning, "BackOff",
		fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.spec.Name, p.podRef()))
	p.notify()
}

// kill stops the pod: no more restarts, SIGTERM now, SIGKILL after grace.
func (p *pod) kill(grace time.Duration) {
	p.mu.Lock()
	if p.killed {
		p.mu.Unlock()
		if grace == 0 {
			p.signalAll(true)
		}
		return
	}
	p.killed = true
	close(p.killCh)
	p.mu.Unlock()
	p.signalAll(false)
	if grace == 0 {
		p.signalAll(true)
		return
	}
	t := p.rt.clock.NewTimer(grace)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			p.signalAll(true)
		case <-p.done:
		}
	}()
}

func (p *pod) signalAll(force bool) {
	p.mu.Lock()
	var running []*ctr
	var procs []*proc
	for _, c := range append(append([]*ctr{}, p.init...), p.ctrs...) {
		if c.proc != nil {
			running = append(running, c)
			procs = append(procs, c.proc)
		}
	}
	p.mu.Unlock()
	for i, c := range running {
		if !force {
			p.rt.event(p.api, c.spec, c.init, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Stopping container %s", c.spec.Name))
		}
		procs[i].signal(force)
	}
}

// status copies the container statuses.
func (p *pod) status() runtime.PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := runtime.PodStatus{Done: p.finished}
	for _, c := range p.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, *c.st.DeepCopy())
	}
	for _, c := range p.ctrs {
		st.ContainerStatuses = append(st.ContainerStatuses, *c.st.DeepCopy())
	}
	return st
}

func (p *pod) find(name string) (*ctr, bool) {
	for _, c := range append(append([]*ctr{}, p.init...), p.ctrs...) {
		if c.spec.Name == name {
			return c, true
		}
	}
	return nil, false
}

// cleanup removes the pod's files (not host paths): its directory goes to
// the spares when it can (spareDirs), but that of a pod with image
// containers, which may still hold their root file systems' mounts.
func (p *pod) cleanup() {
	p.releaseImages()
	recycled := p.rt.spares != nil && !p.runsImages() && p.rt.spares.recycle(p.dir)
	for _, dir := range []string{p.dir, p.rt.podMemoryDir(p.api.UID)} {
		if dir == "" || (recycled && dir == p.dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			p.rt.log.Info("remove pod dir", "dir", dir, "err", err.Error())
		}
	}
}

func ptrBool(b bool) *bool { return &b }

func now(p *pod) metav1.Time { return metav1.NewTime(p.rt.clock.Now().Truncate(time.Second)) }
