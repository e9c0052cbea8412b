package scheduler

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Reasons a node is filtered out, worded as kube-scheduler's plugins word them.
const (
	reasonUnschedulable   = "node(s) were unschedulable"
	reasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	reasonTooManyPods     = "Too many pods"
	reasonInsufficientFmt = "Insufficient %s"
	reasonTaintFmt        = "node(s) had untolerated taint {%s: %s}"
)

// Taints the node lifecycle controller puts on nodes that are not ready.
const (
	TaintNodeNotReady      = "node.kubernetes.io/not-ready"
	TaintNodeUnreachable   = "node.kubernetes.io/unreachable"
	TaintNodeUnschedulable = "node.kubernetes.io/unschedulable"
)

// filterNode returns why pod cannot go to the node, given what is already
// requested there; nil means it fits. resolvable reports whether evicting
// pods could help (only resource shortages can be fixed by preemption).
func filterNode(pod *corev1.Pod, req resources, n *nodeInfo) (reasons []string, resolvable bool) {
	if r := unschedulableReason(pod, n.node); r != "" {
		return []string{r}, false
	}
	if r := taintReason(pod, effectiveTaints(n.node)); r != "" {
		return []string{r}, false
	}
	if !matchesNodeSelectorAndAffinity(pod, n.node) {
		return []string{reasonNodeAffinity}, false
	}
	if rs := insufficient(req, n.requested, n.allocatable); len(rs) > 0 {
		return rs, true
	}
	return nil, false
}

func unschedulableReason(pod *corev1.Pod, node *corev1.Node) string {
	if !node.Spec.Unschedulable {
		return ""
	}
	t := corev1.Taint{Key: TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if tolerated(pod.Spec.Tolerations, t) {
		return ""
	}
	return reasonUnschedulable
}

// effectiveTaints adds the not-ready taint to a node whose Ready condition is
// not True but that the lifecycle controller has not tainted yet.
func effectiveTaints(node *corev1.Node) []corev1.Taint {
	if nodeReady(node) || hasTaintKey(node.Spec.Taints, TaintNodeNotReady) || hasTaintKey(node.Spec.Taints, TaintNodeUnreachable) {
		return node.Spec.Taints
	}
	return append([]corev1.Taint{{Key: TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, node.Spec.Taints...)
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaintKey(taints []corev1.Taint, key string) bool {
	for _, t := range taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// taintReason names the first NoSchedule/NoExecute taint pod does not tolerate.
func taintReason(pod *corev1.Pod, taints []corev1.Taint) string {
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerated(pod.Spec.Tolerations, t) {
			return fmt.Sprintf(reasonTaintFmt, t.Key, t.Value)
		}
	}
	return ""
}

// tolerated reports whether any toleration matches the taint.
func tolerated(tols []corev1.Toleration, t corev1.Taint) bool {
	for _, tol := range tols {
		if Tolerates(tol, t) {
			return true
		}
	}
	return false
}

// Tolerates reports whether one toleration matches a taint (key, effect,
// and Equal/Exists operator; an empty key with Exists matches every key).
func Tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == t.Value
	case corev1.TolerationOpLt, corev1.TolerationOpGt:
		return compareTolerationValue(tol, t.Value)
	}
	return false
}

// compareTolerationValue handles the numeric Lt/Gt toleration operators.
func compareTolerationValue(tol corev1.Toleration, taintValue string) bool {
	tv, err1 := strconv.ParseInt(tol.Value, 10, 64)
	nv, err2 := strconv.ParseInt(taintValue, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if tol.Operator == corev1.TolerationOpLt {
		return nv < tv
	}
	return nv > tv
}

// insufficient lists the resources that would exceed allocatable.
func insufficient(req, used, alloc resources) []string {
	var out []string
	if used.pods+1 > alloc.pods {
		out = append(out, reasonTooManyPods)
	}
	if req.milliCPU > 0 && used.milliCPU+req.milliCPU > alloc.milliCPU {
		out = append(out, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceCPU))
	}
	if req.memory > 0 && used.memory+req.memory > alloc.memory {
		out = append(out, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceMemory))
	}
	if req.ephemeral > 0 && used.ephemeral+req.ephemeral > alloc.ephemeral {
		out = append(out, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceEphemeralStorage))
	}
	for name, v := range req.scalar {
		if v > 0 && used.scalar[name]+v > alloc.scalar[name] {
			out = append(out, fmt.Sprintf(reasonInsufficientFmt, name))
		}
	}
	return out
}
