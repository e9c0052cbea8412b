package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batchlet/batchlet/runtime/sim"
)

// statusPatchViaMap is how the status patch was built before statusPatch
// encoded it in one pass: the status's JSON as a map, its conditions
// replaced by ones with explicit nulls.
func statusPatchViaMap(t *testing.T, uid types.UID, status *corev1.PodStatus, conds []corev1.PodCondition) []byte {
	t.Helper()
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if conds == nil {
		conds = status.Conditions
	}
	list := make([]map[string]any, 0, len(conds))
	for _, c := range conds {
		cm := map[string]any{"type": c.Type, "status": c.Status, "lastProbeTime": nil,
			"lastTransitionTime": c.LastTransitionTime, "reason": nil, "message": nil}
		if c.Reason != "" {
			cm["reason"] = c.Reason
		}
		if c.Message != "" {
			cm["message"] = c.Message
		}
		list = append(list, cm)
	}
	m["conditions"] = list
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": m})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStatusPatchBody(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	started := true
	full := &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long",
		HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIP: "127.1.0.1", PodIPs: []corev1.PodIP{{IP: "127.1.0.1"}},
		StartTime: &now, QOSClass: corev1.PodQOSBestEffort,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonPodFailed, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotReady,
				Message: "containers with unready status: [c]", LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "x", ContainerID: "batchlet://1", RestartCount: 2, Started: &started,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
				StartedAt: now, FinishedAt: now, ContainerID: "batchlet://1"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
	}
	others := append(append([]corev1.PodCondition{}, full.Conditions...),
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: now})
	for name, tc := range map[string]struct {
		status *corev1.PodStatus
		conds  []corev1.PodCondition
	}{
		"empty":            {status: &corev1.PodStatus{}},
		"full":             {status: full},
		"conditions given": {status: full, conds: others},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := statusPatch("uid-1", &corev1.PodStatus{}, tc.status, tc.conds)
			if err != nil {
				t.Fatal(err)
			}
			var gotJSON, wantJSON any
			if err := json.Unmarshal(got, &gotJSON); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(statusPatchViaMap(t, "uid-1", tc.status, tc.conds), &wantJSON); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotJSON, wantJSON) {
				t.Fatalf("patch\n%s\nwant the same JSON as\n%s", got, statusPatchViaMap(t, "uid-1", tc.status, tc.conds))
			}
		})
	}
}

// A status patch that leaves out what the agent's copy of the pod has
// already stores the same pod as the whole status did, whether that copy is
// current or older than the agent's last write.
func TestStatusPatchLeavesOutUnchangedFields(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)) }
	started := at(1)
	cond := func(ty corev1.PodConditionType, st corev1.ConditionStatus, reason string, s int) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: st, Reason: reason, LastTransitionTime: at(s)}
	}
	scheduled := cond(corev1.PodScheduled, corev1.ConditionTrue, "", 0)
	pending := corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{scheduled}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort,
		HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIP: "127.1.0.5", PodIPs: []corev1.PodIP{{IP: "127.1.0.5"}},
		StartTime: &started,
		Conditions: []corev1.PodCondition{cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", 1),
			cond(corev1.PodInitialized, corev1.ConditionTrue, "", 1), cond(corev1.PodReady, corev1.ConditionTrue, "", 1),
			cond(corev1.ContainersReady, corev1.ConditionTrue, "", 1), scheduled},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "x", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(1)}}}}}
	succeeded := *running.DeepCopy()
	succeeded.Phase = corev1.PodSucceeded
	succeeded.Conditions = []corev1.PodCondition{cond(corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", 2),
		cond(corev1.PodInitialized, corev1.ConditionTrue, reasonPodCompleted, 1), cond(corev1.PodReady, corev1.ConditionFalse, reasonPodCompleted, 2),
		cond(corev1.ContainersReady, corev1.ConditionFalse, reasonPodCompleted, 2)}
	succeeded.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: at(1), FinishedAt: at(2)}}}}
	evicted := *running.DeepCopy()
	evicted.Conditions = append(evicted.Conditions, cond(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictionByEvictionAPI", 2))
	failedUnstarted := *pending.DeepCopy()
	failedUnstarted.Phase = corev1.PodFailed

	for _, tc := range []struct {
		name        string
		api, agents corev1.PodStatus // the stored status, the agent's copy
		next        corev1.PodStatus
		wantLeftOut []string
	}{
		{name: "first write", api: pending, agents: pending, next: running, wantLeftOut: []string{`"qosClass"`}},
		{name: "pending to succeeded in one write", api: pending, agents: pending, next: succeeded, wantLeftOut: []string{`"qosClass"`}},
		{name: "running to succeeded", api: running, agents: running, next: succeeded,
			wantLeftOut: []string{`"qosClass"`, `"hostIP"`, `"hostIPs"`, `"podIP"`, `"podIPs"`, `"startTime"`}},
		{name: "copy older than the running write", api: running, agents: pending, next: succeeded, wantLeftOut: []string{`"qosClass"`}},
		{name: "another writer's condition", api: evicted, agents: evicted, next: succeeded, wantLeftOut: []string{`"startTime"`}},
		{name: "unstarted pod failed", api: pending, agents: pending, next: failedUnstarted, wantLeftOut: []string{`"qosClass"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := func(patch []byte) corev1.Pod {
				t.Helper()
				pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-1"}, Status: tc.api}
				orig, err := json.Marshal(&pod)
				if err != nil {
					t.Fatal(err)
				}
				out, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.Pod{})
				if err != nil {
					t.Fatalf("apply %s: %v", patch, err)
				}
				var got corev1.Pod
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatal(err)
				}
				return got
			}
			whole, err := statusPatch("uid-1", &corev1.PodStatus{}, &tc.next, nil)
			if err != nil {
				t.Fatal(err)
			}
			trimmed, err := statusPatch("uid-1", &tc.agents, &tc.next, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := stored(trimmed), stored(whole); !apiequality.Semantic.DeepEqual(got, want) {
				t.Fatalf("stored with the trimmed patch\n%+v\nwant as with the whole status\n%+v", got.Status, want.Status)
			}
			for _, f := range tc.wantLeftOut {
				if bytes.Contains(trimmed, []byte(f+":")) {
					t.Errorf("patch %s has %s, want it left out", trimmed, f)
				}
			}
		})
	}
}

// BenchmarkStatusPatch encodes a Running -> Succeeded status patch over an
// agent's copy that is empty (every field sent, as before the patch left
// unchanged fields out) and one that has the Running write; it reports the
// body's size.
func BenchmarkStatusPatch(b *testing.B) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	running := corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort,
		HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIP: "127.1.0.5", PodIPs: []corev1.PodIP{{IP: "127.1.0.5"}},
		StartTime: &now}
	next := running
	next.Phase = corev1.PodSucceeded
	next.Conditions = []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Reason: reasonPodCompleted, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonPodCompleted, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonPodCompleted, LastTransitionTime: now}}
	next.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "x", ImageID: "x", ContainerID: "batchlet://1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: "batchlet://1"}}}}
	for name, base := range map[string]*corev1.PodStatus{"whole": {}, "changed": &running} {
		b.Run(name, func(b *testing.B) {
			var n int
			for b.Loop() {
				body, err := statusPatch("uid-1", base, &next, nil)
				if err != nil {
					b.Fatal(err)
				}
				n = len(body)
			}
			b.ReportMetric(float64(n), "body-bytes")
		})
	}
}

// With Config.PatchStatus the status patches (and the merge patch retry of
// a server without strategic merge) go through it, not the client, with
// the bodies the client would have sent; the answer is its version.
func TestPatchStatusThroughConfig(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	client := fake.NewClientset(pod)
	type sent struct {
		ns, name string
		pt       types.PatchType
		body     string
	}
	var got []sent
	a, err := New(Config{Client: client, NodeName: "node-1", Runtime: sim.New(ctx, nil), Port: -1,
		Logger: slog.New(slog.DiscardHandler),
		PatchStatus: func(_ context.Context, ns, name string, pt types.PatchType, data []byte) (string, error) {
			got = append(got, sent{ns, name, pt, string(data)})
			if pt == types.StrategicMergePatchType {
				return "", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 415, Reason: metav1.StatusReasonUnsupportedMediaType}}
			}
			return "42", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	status := &corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	rv, err := a.patchStatusRV(ctx, pod, status)
	if err != nil || rv != "42" {
		t.Fatalf("patchStatusRV = %q, %v; want 42", rv, err)
	}
	strategic, err := statusPatch(pod.UID, &pod.Status, status, nil)
	if err != nil {
		t.Fatal(err)
	}
	merge, err := statusPatch(pod.UID, &pod.Status, status, mergeOthers(status.Conditions, pod.Status.Conditions))
	if err != nil {
		t.Fatal(err)
	}
	want := []sent{{"ns", "p", types.StrategicMergePatchType, string(strategic)}, {"ns", "p", types.MergePatchType, string(merge)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %+v, want %+v", got, want)
	}
	for _, act := range client.Actions() {
		if act.GetVerb() == "patch" {
			t.Fatalf("the client patched too: %v", act)
		}
	}
}
