package nodelifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Unix(1_000_000, 0)

func TestEvictionDue(t *testing.T) {
	added := metav1.NewTime(t0)
	unreachable := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	tol := func(secs *int64) []corev1.Toleration {
		return []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}}
	}
	tests := map[string]struct {
		tols      []corev1.Toleration
		taints    []corev1.Taint
		now       time.Time
		wantNow   bool
		wantNever bool
	}{
		"no toleration: evict at once":       {taints: unreachable, now: t0, wantNow: true},
		"tolerated forever":                  {tols: tol(nil), taints: unreachable, now: t0.Add(time.Hour), wantNever: true},
		"within tolerationSeconds":           {tols: tol(ptr.To[int64](300)), taints: unreachable, now: t0.Add(299 * time.Second)},
		"tolerationSeconds elapsed":          {tols: tol(ptr.To[int64](300)), taints: unreachable, now: t0.Add(300 * time.Second), wantNow: true},
		"NoSchedule taints do not evict":     {taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}, now: t0, wantNever: true},
		"one untolerated taint among others": {tols: tol(nil), taints: append(unreachable, corev1.Taint{Key: "y", Effect: corev1.TaintEffectNoExecute}), now: t0, wantNow: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.tols}}
			gotNow, _, gotNever := evictionDue(pod, tc.taints, tc.now)
			if gotNow != tc.wantNow || gotNever != tc.wantNever {
				t.Errorf("evictionDue = now %v never %v; want now %v never %v", gotNow, gotNever, tc.wantNow, tc.wantNever)
			}
		})
	}
}

func TestDesiredTaints(t *testing.T) {
	now := metav1.NewTime(t0)
	node := func(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	keys := func(ts []corev1.Taint) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Key+":"+string(t.Effect))
		}
		return out
	}
	got := keys(desiredTaints(node(corev1.ConditionUnknown, corev1.Taint{Key: "user", Effect: corev1.TaintEffectNoSchedule}), now))
	want := []string{"user:NoSchedule", TaintUnreachable + ":NoSchedule", TaintUnreachable + ":NoExecute"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("unknown node taints = %v, want %v", got, want)
	}
	got = keys(desiredTaints(node(corev1.ConditionFalse, corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute}), now))
	if len(got) != 2 || got[0] != TaintNotReady+":NoSchedule" || got[1] != TaintNotReady+":NoExecute" {
		t.Errorf("not-ready node taints = %v, want not-ready NoSchedule+NoExecute only", got)
	}
	if got := desiredTaints(node(corev1.ConditionTrue, corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoExecute}), now); len(got) != 0 {
		t.Errorf("ready node keeps %v, want readiness taints removed", keys(got))
	}
}

func TestUnknownConditions(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}}}
	conds, changed := unknownConditions(node, metav1.NewTime(t0))
	if !changed || len(conds) != 4 {
		t.Fatalf("conditions = %+v, want Ready and the three pressure conditions", conds)
	}
	if c := conds[0]; c.Type != corev1.NodeReady || c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready = %+v", c)
	}
}
