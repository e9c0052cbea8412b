package podgc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

var t0 = time.Unix(1_000_000, 0)

func pod(name, node string, phase corev1.PodPhase, created int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(created) * time.Second))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	return p
}

func podNames(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	pods := []*corev1.Pod{
		pod("done-new", "n1", corev1.PodSucceeded, 30),
		pod("done-old", "n1", corev1.PodFailed, 10),
		pod("done-mid", "n1", corev1.PodSucceeded, 20),
		pod("running", "n1", corev1.PodRunning, 0),
		pod("lost", "gone", corev1.PodRunning, 0),
		terminating(pod("unscheduled", "", corev1.PodPending, 0)),
		pod("pending", "", corev1.PodPending, 0),
	}
	missing := map[string]time.Time{}
	o := observed{pods: pods, nodes: map[string]bool{"n1": true}, threshold: 1, missingSince: missing, quarantine: 40 * time.Second, now: t0}
	p := decide(o)
	if got := podNames(p.terminated); len(got) != 2 || got[0] != "done-old" || got[1] != "done-mid" {
		t.Errorf("terminated = %v, want the two oldest [done-old done-mid]", got)
	}
	if len(p.orphaned) != 0 {
		t.Errorf("orphaned = %v before the quarantine passed", podNames(p.orphaned))
	}
	if got := podNames(p.unscheduledTerminating); len(got) != 1 || got[0] != "unscheduled" {
		t.Errorf("unscheduledTerminating = %v", got)
	}
	o.now = t0.Add(40 * time.Second)
	if got := podNames(decide(o).orphaned); len(got) != 1 || got[0] != "lost" {
		t.Errorf("orphaned after quarantine = %v, want [lost]", got)
	}
	o.threshold = 0
	if got := decide(o).terminated; got != nil {
		t.Errorf("threshold 0 must disable terminated-pod GC, got %v", podNames(got))
	}
}

func TestPassFailsAndDeletesOrphans(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		pod("lost", "gone", corev1.PodRunning, 0),
		pod("fine", "n1", corev1.PodRunning, 0),
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "lost", metav1.GetOptions{}); err != nil {
		t.Fatal("orphan deleted before the quarantine")
	}
	clk.Step(DefaultQuarantine)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var patched, deleted bool
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "patch":
			pa := a.(interface{ GetPatch() []byte })
			want := `{"status":{"conditions":[{"type":"DisruptionTarget","status":"True","lastProbeTime":null,"lastTransitionTime":"` + metav1.NewTime(clk.Now()).UTC().Format(time.RFC3339) + `","reason":"DeletionByPodGC","message":"PodGC: node no longer exists"}],"phase":"Failed"}}`
			patched = string(pa.GetPatch()) == want
			if !patched {
				t.Errorf("patch = %s\nwant    %s", pa.GetPatch(), want)
			}
		case "delete":
			deleted = patched // the status write must come first
		}
	}
	if !patched || !deleted {
		t.Errorf("orphan patched=%v deleted=%v, want both (Failed + DisruptionTarget, then delete)", patched, deleted)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "fine", metav1.GetOptions{}); err != nil {
		t.Error("pod on a live node was deleted")
	}
}
