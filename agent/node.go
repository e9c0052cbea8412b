package agent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"encoding/json"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// registerNode creates the Node (or takes over an existing one) and writes
// its status.
func (a *Agent) registerNode(ctx context.Context) error {
	nodes := a.cfg.Client.CoreV1().Nodes()
	existing, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("register node %s: %w", a.cfg.NodeName, err)
	}
	if err != nil {
		existing = nil
	}
	want := a.nodeObject()
	if a.ownIPs {
		cidr, err := a.choosePodCIDR(ctx, existing)
		if err != nil {
			return err
		}
		if cidr != "" {
			want.Spec.PodCIDR, want.Spec.PodCIDRs = cidr, []string{cidr}
		}
	}
	node, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err == nil {
			node = node.DeepCopy()
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			for k, v := range want.Labels {
				node.Labels[k] = v
			}
			if node.Spec.PodCIDR == "" && want.Spec.PodCIDR != "" {
				node.Spec.PodCIDR, node.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
			}
			node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", a.cfg.NodeName, err)
	}
	a.nodeUID = node.UID
	a.usePodCIDR(node)
	if !a.started {
		a.started = true
		a.recordStarting()
	}
	if err := a.patchNodeStatus(ctx, node); err != nil {
		return err
	}
	a.log.Info("node registered", "uid", node.UID)
	return nil
}

func (a *Agent) nodeObject() *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname":  a.cfg.NodeName,
		"kubernetes.io/os":        goruntime.GOOS,
		"kubernetes.io/arch":      goruntime.GOARCH,
		"beta.kubernetes.io/os":   goruntime.GOOS,
		"beta.kubernetes.io/arch": goruntime.GOARCH,
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Labels: labels}}
}

// nodeStatus is the Node status the agent reports.
func (a *Agent) nodeStatus(old *corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.NewTime(a.cfg.Clock.Now().Truncate(time.Second))
	capacity := hostCapacity()
	for k, v := range a.cfg.Capacity {
		capacity[k] = v
	}
	capacity[corev1.ResourcePods] = *resource.NewQuantity(int64(a.cfg.MaxPods), resource.DecimalSI)
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for i := range conds {
		c := &conds[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       "",
		Conditions:  conds,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: a.cfg.ListenAddress},
			{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.Port())}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               readTrim("/etc/machine-id"),
			SystemUUID:              readTrim("/sys/class/dmi/id/product_uuid"),
			BootID:                  readTrim("/proc/sys/kernel/random/boot_id"),
			KernelVersion:           readTrim("/proc/sys/kernel/osrelease"),
			OSImage:                 osImage(),
			ContainerRuntimeVersion: "batchlet://" + a.cfg.Version,
			KubeletVersion:          a.cfg.Version,
			OperatingSystem:         goruntime.GOOS,
			Architecture:            goruntime.GOARCH,
		},
	}
}

// patchNodeStatus writes the node status with a strategic merge patch.
func (a *Agent) patchNodeStatus(ctx context.Context, node *corev1.Node) error {
	oldJSON, err := json.Marshal(corev1.Node{Status: node.Status})
	if err != nil {
		return fmt.Errorf("encode node: %w", err)
	}
	next := a.nodeStatus(&node.Status)
	newJSON, err := json.Marshal(corev1.Node{Status: next})
	if err != nil {
		return fmt.Errorf("encode node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Node{})
	if err != nil {
		return fmt.Errorf("node status patch: %w", err)
	}
	if string(patch) == "{}" {
		return nil
	}
	_, err = a.cfg.Client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node %s status: %w", node.Name, err)
	}
	a.recordConditionEvents(node.Status.Conditions, next.Conditions)
	return nil
}

// heartbeat refreshes the node status every NodeStatusInterval.
func (a *Agent) heartbeat(ctx context.Context) {
	t := a.cfg.Clock.NewTicker(a.cfg.NodeStatusInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		node, err := a.cfg.Client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			err = a.registerNode(ctx)
		} else if err == nil {
			err = a.patchNodeStatus(ctx, node)
		}
		if err != nil && ctx.Err() == nil {
			a.log.Info("node status update failed", "err", err.Error())
		}
	}
}

// hostCapacity reads the host's cpus, memory and disk.
func hostCapacity() corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
	}
	if kb := memTotalKB(); kb > 0 {
		out[corev1.ResourceMemory] = *resource.NewQuantity(kb*1024, resource.BinarySI)
	}
	out[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(diskBytes("/"), resource.BinarySI)
	return out
}

func memTotalKB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			return v
		}
	}
	return 0
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func osImage() string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return goruntime.GOOS
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return goruntime.GOOS
}
