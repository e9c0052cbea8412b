package scheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// resources is an amount of every schedulable resource. Scalars hold
// extended resources and hugepages, in their integer units.
type resources struct {
	milliCPU  int64
	memory    int64
	ephemeral int64
	pods      int64
	scalar    map[corev1.ResourceName]int64
}

func (r *resources) add(o resources) {
	r.milliCPU += o.milliCPU
	r.memory += o.memory
	r.ephemeral += o.ephemeral
	r.pods += o.pods
	for k, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[k] += v
	}
}

func (r *resources) sub(o resources) {
	neg := resources{milliCPU: -o.milliCPU, memory: -o.memory, ephemeral: -o.ephemeral, pods: -o.pods}
	for k, v := range o.scalar {
		if neg.scalar == nil {
			neg.scalar = map[corev1.ResourceName]int64{}
		}
		neg.scalar[k] = -v
	}
	r.add(neg)
}

// setMax raises each amount of r to o's where o is larger.
func (r *resources) setMax(o resources) {
	r.milliCPU = max(r.milliCPU, o.milliCPU)
	r.memory = max(r.memory, o.memory)
	r.ephemeral = max(r.ephemeral, o.ephemeral)
	for k, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[k] = max(r.scalar[k], v)
	}
}

func isScalar(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "/") || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// fromList reads a ResourceList.
func fromList(l corev1.ResourceList) resources {
	var r resources
	for name, q := range l {
		switch {
		case name == corev1.ResourceCPU:
			r.milliCPU = q.MilliValue()
		case name == corev1.ResourceMemory:
			r.memory = q.Value()
		case name == corev1.ResourceEphemeralStorage:
			r.ephemeral = q.Value()
		case name == corev1.ResourcePods:
			r.pods = q.Value()
		case isScalar(name):
			if r.scalar == nil {
				r.scalar = map[corev1.ResourceName]int64{}
			}
			r.scalar[name] = q.Value()
		}
	}
	return r
}

// podRequests is what a pod occupies on a node: the larger of its running
// containers (plus sidecars) and of each init container step, plus overhead,
// and one pod slot.
func podRequests(pod *corev1.Pod) resources {
	return podRequestsWith(pod, containerRequests)
}

// Defaults the scheduler scores a container with when it requests no cpu or
// no memory, as kube-scheduler does: best-effort pods still spread.
const (
	defaultScoreMilliCPU = 100
	defaultScoreMemory   = 200 * 1024 * 1024
)

// podScoreRequests is podRequests with every container's missing cpu and
// memory requests counted at the scoring defaults; it only ranks nodes.
func podScoreRequests(pod *corev1.Pod) resources {
	return podRequestsWith(pod, func(c corev1.Container) resources {
		r := containerRequests(c)
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			r.milliCPU = defaultScoreMilliCPU
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			r.memory = defaultScoreMemory
		}
		return r
	})
}

func podRequestsWith(pod *corev1.Pod, containerRequests func(corev1.Container) resources) resources {
	var running, sidecars resources
	for _, c := range pod.Spec.Containers {
		running.add(containerRequests(c))
	}
	var initPeak resources
	for _, c := range pod.Spec.InitContainers {
		req := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.add(req)
			initPeak.setMax(sidecars)
			continue
		}
		step := sidecars
		step.scalar = cloneScalar(sidecars.scalar)
		step.add(req)
		initPeak.setMax(step)
	}
	running.add(sidecars)
	running.setMax(initPeak)
	running.add(fromList(pod.Spec.Overhead))
	running.pods = 1
	return running
}

func containerRequests(c corev1.Container) resources {
	r := fromList(c.Resources.Requests)
	r.pods = 0
	return r
}

func cloneScalar(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	if m == nil {
		return nil
	}
	out := make(map[corev1.ResourceName]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
