package agent

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batchlet/batchlet/runtime/sim"
)

// recordingIPs wraps an allocator and records releases.
type recordingIPs struct {
	IPAllocator
	mu       sync.Mutex
	released map[types.UID]bool
}

func (r *recordingIPs) Release(uid types.UID) {
	r.mu.Lock()
	r.released[uid] = true
	r.mu.Unlock()
	r.IPAllocator.Release(uid)
}

func (r *recordingIPs) wasReleased(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released[uid]
}

// A terminated pod gives its IP back while the pod object still exists, so
// a million-completion Job never runs the node out of pod IPs.
func TestTerminatedPodReleasesItsIP(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	ips := &recordingIPs{IPAllocator: NewLoopbackAllocator(), released: map[types.UID]bool{}}
	a, err := New(Config{Client: client, NodeName: "node-1", Runtime: sim.New(ctx, nil), Port: -1, PodIPs: ips,
		Logger: slog.New(slog.DiscardHandler), ShutdownGracePeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h := &harness{t: t, client: client}
	h.create(boundPod("done", nil))
	p := h.waitPhase("done", corev1.PodSucceeded)
	if p.Status.PodIP == "" {
		t.Fatalf("succeeded pod lost its status.podIP")
	}
	h.eventually("IP released", func() bool { return ips.wasReleased(p.UID) })
	if h.pod("done") == nil {
		t.Fatalf("pod deleted: the release must not wait for deletion")
	}
}
