package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/sim"
)

// adoptingRuntime is a sim whose containers outlive the agent: Adopt
// answers what adoptions says for a pod (taking an adopted one over), and
// the agent's own StartPod calls are counted.
type adoptingRuntime struct {
	*sim.Runtime
	adoptions map[types.UID]runtime.Adoption

	mu     sync.Mutex
	starts map[types.UID]int
	reaped map[types.UID]bool
}

func (r *adoptingRuntime) StartPod(ctx context.Context, pod *corev1.Pod, res runtime.Resolver) error {
	r.mu.Lock()
	r.starts[pod.UID]++
	r.mu.Unlock()
	return r.Runtime.StartPod(ctx, pod, res)
}

func (r *adoptingRuntime) Adopt(ctx context.Context, pod *corev1.Pod, res runtime.Resolver) (runtime.Adoption, error) {
	ad := r.adoptions[pod.UID]
	if ad.Adopted {
		return ad, r.Runtime.StartPod(ctx, pod, res)
	}
	return ad, nil
}

func (r *adoptingRuntime) ReapOrphans(pods map[types.UID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reaped = pods
}

func (r *adoptingRuntime) startsOf(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[uid]
}

func newAdoptingHarness(t *testing.T, adoptions map[types.UID]runtime.Adoption, configure func(*Config)) (*harness, *adoptingRuntime) {
	var rt *adoptingRuntime
	h := newHarnessWith(t, func(c *Config) {
		c.FirstStatusDelay = -1
		rt = &adoptingRuntime{Runtime: c.Runtime.(*sim.Runtime), adoptions: adoptions, starts: map[types.UID]int{}}
		c.Runtime = rt
		if configure != nil {
			configure(c)
		}
	})
	return h, rt
}

// A pod whose containers the runtime adopts is neither started again nor
// counted as lost: it runs on to its end.
func TestAdoptedPodRunsOn(t *testing.T) {
	h, rt := newAdoptingHarness(t, map[types.UID]runtime.Adoption{"uid-kept": {Adopted: true}}, nil)
	h.create(lostPod("kept", corev1.RestartPolicyNever, 0, h.clock.Now().Add(-time.Minute)))
	h.eventually("agent knows kept", func() bool { return h.agent.state("default/kept") != nil })
	h.clock.Step(2 * time.Hour)
	p := h.waitPhase("kept", corev1.PodSucceeded)
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
		t.Fatalf("state %+v, want Completed", p.Status.ContainerStatuses[0].State)
	}
	if n := rt.startsOf("uid-kept"); n != 0 {
		t.Fatalf("the agent started an adopted pod %d times", n)
	}
}

// Statuses the runtime corrects (an attempt the API never saw run, whose
// container is gone) make the agent count the container as lost instead of
// starting it a second time.
func TestCorrectedStatusesCountAsLost(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lost := runtime.Adoption{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox", Started: new(true),
		ContainerID: "sim://lost", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	h, rt := newAdoptingHarness(t, map[types.UID]runtime.Adoption{"uid-twice": lost}, nil)
	h.create(boundPod("twice", map[string]string{sim.DurationAnnotation: "1s"}))
	p := h.waitPhase("twice", corev1.PodFailed)
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "ContainerStatusUnknown" || term.ExitCode != 137 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("status %+v, want the lost attempt ContainerStatusUnknown", p.Status.ContainerStatuses[0])
	}
	if n := rt.startsOf("uid-twice"); n != 1 {
		t.Fatalf("StartPod called %d times, want once (with nothing left to run)", n)
	}
}

// Before running anything, the agent hands the runtime the pods of its
// node and whether each may still run, to reap the rest.
func TestReapOrphansBeforeStart(t *testing.T) {
	done := boundPod("done", nil)
	done.Status.Phase = corev1.PodSucceeded
	h, rt := newAdoptingHarness(t, nil, func(c *Config) {
		for _, p := range []*corev1.Pod{boundPod("live", nil), done} {
			if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	})
	h.eventually("orphans reaped", func() bool {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.reaped != nil
	})
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.reaped) != 2 || !rt.reaped["uid-live"] || rt.reaped["uid-done"] {
		t.Fatalf("reaped with %v, want live: true, done: false", rt.reaped)
	}
}

// With KeepPodsOnShutdown, stopping the agent terminates nothing.
func TestShutdownKeepsPods(t *testing.T) {
	h, _ := newAdoptingHarness(t, nil, func(c *Config) { c.KeepPodsOnShutdown = true })
	h.create(boundPod("stay", map[string]string{sim.DurationAnnotation: "1h"}))
	h.waitPhase("stay", corev1.PodRunning)
	h.agent.shutdown(context.Background())
	if h.agent.isShuttingDown() {
		t.Fatal("the agent is shutting its pods down")
	}
	rs, ok := h.agent.cfg.Runtime.PodStatus("uid-stay")
	if !ok || rs.Done || rs.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("runtime status %+v after shutdown, want still running", rs)
	}
}
