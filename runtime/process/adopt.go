package process

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

// attemptFate is what became of an attempt an earlier agent process
// recorded, as a restarted agent finds it.
type attemptFate int

const (
	// fateNone: nothing on record.
	fateNone attemptFate = iota
	// fateUnstarted: recorded, but no shim holds its lock and none wrote
	// a state: the container never started, and never will.
	fateUnstarted
	// fateRunning: a shim holds the lock: it runs the container (or is
	// about to start it, or to record its end); adopt it.
	fateRunning
	// fateExited: the shim recorded the container's end.
	fateExited
	// fateLost: the container started (or was starting) but its shim is
	// gone without recording an end: the host rebooted, or someone killed
	// the shim, whose container died with it.
	fateLost
)

func (f attemptFate) String() string {
	return [...]string{"none", "unstarted", "running", "exited", "lost"}[f]
}

// attemptRecord is what the disk shows of an attempt.
type attemptRecord struct {
	// spec: the agent wrote the shim's spec.
	spec bool
	// shimAlive: a shim holds the attempt's lock.
	shimAlive bool
	// state is the state file; nil when there is none.
	state *shim.State
}

// classifyAttempt decides an attempt's fate. The lock, not the PIDs,
// tells whether a shim lives: it is released when the last process holding
// it ends, whatever happens to PIDs, zombies or clocks; the container's PID
// and start time are checked only before signalling it or entering its
// namespaces.
func classifyAttempt(rec attemptRecord) attemptFate {
	switch {
	case rec.shimAlive:
		return fateRunning
	case rec.state == nil && rec.spec:
		return fateUnstarted
	case rec.state == nil:
		return fateNone
	case rec.state.Phase == shim.PhaseExited:
		return fateExited
	}
	return fateLost
}

func readRecord(base string) (attemptRecord, error) {
	var rec attemptRecord
	if _, err := os.Stat(base + ".shim"); err == nil {
		rec.spec = true
	}
	// The lock first: a shim that ends meanwhile has written its state.
	rec.shimAlive = lockHeld(base)
	st, err := shim.ReadState(base)
	rec.state = st
	return rec, err
}

// recordedAttempts returns the last attempt on record of each container in
// the pod directory dir.
func recordedAttempts(dir string) (map[string]int, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pod dir: %w", err)
	}
	last := map[string]int{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".shim")
		if !ok {
			name, ok = strings.CutSuffix(e.Name(), ".state")
		}
		if !ok {
			continue
		}
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(name[i+1:])
		if err != nil {
			continue
		}
		if cur, seen := last[name[:i]]; !seen || n > cur {
			last[name[:i]] = n
		}
	}
	return last, nil
}

// adoption is an attempt of a container that a restarted agent goes on
// from instead of starting one.
type adoption struct {
	n    int
	base string
	fate attemptFate
	// state is the attempt's state file when it had one.
	state *shim.State
}

// Kubelet's reason and messages for containers it cannot locate.
const (
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	messageLostOnTermination     = "The container could not be located when the pod was terminated"
	messageLostAndRestarted      = "The container could not be located when the pod was deleted.  The container used to be Running"
)

var _ runtime.Adopter = (*Runtime)(nil)

// Adopt implements runtime.Adopter: it reads the records the pod's
// attempts left in its directory.
func (r *Runtime) Adopt(ctx context.Context, apiPod *corev1.Pod, res runtime.Resolver) (runtime.Adoption, error) {
	if _, ok := r.get(apiPod.UID); ok {
		return runtime.Adoption{Adopted: true}, nil
	}
	// Every new pod comes here: one ReadDir of a directory that does not
	// exist yet is all it costs.
	last, err := recordedAttempts(r.podDir(apiPod.UID))
	if err != nil || len(last) == 0 {
		return runtime.Adoption{}, err
	}
	p := newPod(r, apiPod.DeepCopy(), res)
	adopt, lost := false, false
	for _, c := range append(append([]*ctr{}, p.init...), p.ctrs...) {
		n, ok := last[c.spec.Name]
		if !ok || (c.done && int(c.st.RestartCount) >= n) {
			continue // the API knows how that attempt ended
		}
		base := p.attemptBase(c.spec.Name, n)
		rec, err := readRecord(base)
		if err != nil {
			return runtime.Adoption{}, err
		}
		fate := classifyAttempt(rec)
		r.log.Info("found a container of an earlier agent", "namespace", apiPod.Namespace, "name", apiPod.Name,
			"container", c.spec.Name, "attempt", n, "fate", fate.String())
		switch fate {
		case fateRunning, fateExited:
			adopt = true
		case fateLost:
			lost = true
		case fateUnstarted:
			if n >= c.first {
				c.first, c.lastAttempt = n, n-1
			}
			continue
		default:
			continue
		}
		c.adopt = &adoption{n: n, base: base, fate: fate, state: rec.state}
		c.done, c.first = false, n
	}
	if !adopt {
		if !lost {
			return runtime.Adoption{}, nil
		}
		return lostStatuses(p, apiPod), nil
	}
	r.mu.Lock()
	if _, ok := r.pods[apiPod.UID]; ok {
		r.mu.Unlock()
		return runtime.Adoption{Adopted: true}, nil
	}
	r.pods[apiPod.UID] = p
	r.mu.Unlock()
	go p.run()
	return runtime.Adoption{Adopted: true}, nil
}

// lostStatuses are the pod's statuses with each lost attempt shown running
// (it started, even if the API never saw it), for the agent to count it as
// lost.
func lostStatuses(p *pod, apiPod *corev1.Pod) runtime.Adoption {
	correct := func(spec []*ctr, api []corev1.ContainerStatus) []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, 0, len(spec))
		for _, c := range spec {
			var cs corev1.ContainerStatus
			if prev := findAPIStatus(api, c.spec.Name); prev != nil {
				cs = *prev.DeepCopy()
			} else {
				cs = corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, Started: ptrBool(false), State: c.st.State}
			}
			if a := c.adopt; a != nil && a.fate == fateLost && (cs.State.Terminated == nil || int(cs.RestartCount) < a.n) {
				var started metav1.Time
				if a.state != nil && !a.state.StartedAt.IsZero() {
					started = metav1.NewTime(a.state.StartedAt.Truncate(time.Second))
				}
				cs.RestartCount = int32(a.n)
				cs.ContainerID, cs.ImageID = containerID(p, c, a.n), imageID(c.spec, nil)
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
				cs.Started = ptrBool(true)
			}
			out = append(out, cs)
		}
		return out
	}
	return runtime.Adoption{
		InitContainerStatuses: correct(p.init, apiPod.Status.InitContainerStatuses),
		ContainerStatuses:     correct(p.ctrs, apiPod.Status.ContainerStatuses),
	}
}

func findAPIStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// resumeAttempt goes on from attempt a of c, recorded by an earlier agent
// process: it waits for a running one to end and reports how it ended.
func (p *pod) resumeAttempt(c *ctr, a *adoption) (code int32, ran time.Duration, ok bool) {
	p.mu.Lock()
	c.lastAttempt = a.n
	if int(c.st.RestartCount) < a.n {
		// The API never saw this attempt: the previous one is its last
		// state.
		if prev, _ := shim.ReadState(p.attemptBase(c.spec.Name, a.n-1)); prev != nil && prev.Phase == shim.PhaseExited {
			c.st.LastTerminationState = corev1.ContainerState{Terminated: terminatedFrom(p, c, a.n-1, prev)}
		}
	}
	c.st.RestartCount = int32(a.n)
	p.mu.Unlock()
	if a.fate == fateLost {
		return p.lostAttempt(c, a), 0, true
	}
	st := a.state
	if st == nil || st.Phase == shim.PhaseStarting {
		if st = p.waitShimStarted(a.base); st == nil {
			return p.lostAttempt(c, a), 0, true
		}
	}
	if st.StartError != "" {
		return p.startError(c, a.n, "failed to start container process: "+st.StartError), 0, true
	}
	spec, ns := readShimSpec(a.base)
	pr := &proc{pid: st.Pid, pidStart: st.PidStart, shim: &shimRef{base: a.base}, ns: ns,
		image: spec.ImageID != "", exited: make(chan struct{}), drained: make(chan struct{})}
	p.holdAdoptedImage(spec)
	close(pr.drained) // the output of an adopted shim goes to its log only
	if spec.CgroupDir != "" {
		pr.cg = &containerCgroup{dir: spec.CgroupDir}
	}
	pr.shim.waitUnlocked(pr.exited)
	started := metav1.NewTime(st.StartedAt.Truncate(time.Second))
	id := containerID(p, c, a.n)
	p.mu.Lock()
	c.env, c.workDir, c.proc = parseEnviron(spec.Env), spec.WorkDir, pr
	c.st.ContainerID, c.st.ImageID = id, imageID(c.spec, nil)
	if spec.ImageID != "" {
		c.st.ImageID = spec.ImageID
	}
	c.st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	c.st.Started = ptrBool(true)
	killed := p.killed
	p.mu.Unlock()
	if killed {
		pr.signal(false)
	}
	p.notify()
	code, ran = p.await(c, pr, started, id, p.logPath(c.spec.Name, a.n))
	return code, ran, true
}

// terminatedFrom is the terminated state a recorded end shows.
func terminatedFrom(p *pod, c *ctr, n int, st *shim.State) *corev1.ContainerStateTerminated {
	code := int32(st.ExitCode)
	if st.Signal != 0 {
		code = 128 + int32(st.Signal)
	}
	reason := "Error"
	if code == 0 {
		reason = "Completed"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, ContainerID: containerID(p, c, n),
		StartedAt: metav1.NewTime(st.StartedAt.Truncate(time.Second)), FinishedAt: metav1.NewTime(st.FinishedAt.Truncate(time.Second))}
}

// waitShimStarted waits for a live shim to start its container or end;
// nil when it ended without a record.
func (p *pod) waitShimStarted(base string) *shim.State {
	for {
		st, _ := shim.ReadState(base)
		if st != nil && st.Phase != shim.PhaseStarting {
			return st
		}
		if !lockHeld(base) {
			st, _ = shim.ReadState(base)
			if st != nil && st.Phase != shim.PhaseStarting {
				return st
			}
			return nil
		}
		if !p.sleep(20 * time.Millisecond) {
			return nil
		}
	}
}

// lostAttempt ends attempt a of c as the kubelet ends a container it can
// no longer locate: exit code 137, ContainerStatusUnknown.
func (p *pod) lostAttempt(c *ctr, a *adoption) int32 {
	msg := messageLostAndRestarted
	if p.api.Spec.RestartPolicy == corev1.RestartPolicyNever {
		msg = messageLostOnTermination
	}
	p.mu.Lock()
	c.st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
		Reason: reasonContainerStatusUnknown, Message: msg}}
	c.st.Ready, c.st.Started = false, ptrBool(false)
	p.mu.Unlock()
	p.notify()
	return 137
}

// ReapOrphans implements runtime.Adopter. It kills the live shims'
// containers (each shim then records the end and exits) and removes the
// directories of pods absent from pods once their shims are gone, in the
// background.
func (r *Runtime) ReapOrphans(pods map[types.UID]bool) {
	onDisk, err := r.podDirsOnDisk()
	if err != nil {
		r.log.Info("read runtime root to reap orphaned containers", "err", err.Error())
		return
	}
	for _, pd := range onDisk {
		uid, dir := pd.uid, pd.dir
		mayRun, known := pods[uid]
		if mayRun {
			continue
		}
		last, err := recordedAttempts(dir)
		if err != nil || len(last) == 0 {
			continue // not a pod directory of this runtime's shims
		}
		var live []string
		for name, n := range last {
			base := filepath.Join(dir, name+"."+strconv.Itoa(n))
			if !lockHeld(base) {
				continue
			}
			live = append(live, base)
			st, _ := shim.ReadState(base)
			switch {
			case st == nil:
			case st.Phase == shim.PhaseRunning && shim.SameProcess(st.Pid, st.PidStart):
				_ = unix.Kill(st.Pid, unix.SIGKILL) // its shim records the end
			case shim.SameProcess(st.ShimPid, st.ShimStart):
				_ = unix.Kill(st.ShimPid, unix.SIGKILL) // the container dies with it
			}
		}
		r.log.Info("reaping the containers of a pod that must not run", "uid", string(uid), "running", len(live), "known", known)
		go r.removeOrphan(dir, live, !known)
	}
}

// removeOrphan waits for the shims holding the locks of bases to end, then
// removes dir when asked.
func (r *Runtime) removeOrphan(dir string, bases []string, remove bool) {
	for _, base := range bases {
		exited := make(chan struct{})
		(&shimRef{base: base}).waitUnlocked(exited)
		<-exited
	}
	if !remove {
		return
	}
	for _, d := range []string{dir, r.podMemoryDir(types.UID(filepath.Base(dir)))} {
		if d == "" {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			r.log.Info("remove orphaned pod dir", "dir", d, "err", err.Error())
		}
	}
}

// readShimSpec reads an attempt's shim spec (zero when unreadable) and
// whether its container runs in namespaces of its own (exec joins them):
// Init in the current format; "namespaces" in the one written before the
// container init started every namespaced container, whose live shims an
// upgraded agent adopts.
func readShimSpec(base string) (spec shim.Spec, ns bool) {
	b, err := os.ReadFile(base + ".shim")
	if err != nil {
		return spec, false
	}
	var legacy struct {
		Namespaces bool `json:"namespaces"`
	}
	_ = json.Unmarshal(b, &spec)
	_ = json.Unmarshal(b, &legacy)
	return spec, spec.Init || legacy.Namespaces
}
