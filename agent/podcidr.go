package agent

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Several agents on one host share 127.0.0.0/8 for pod IPs. Each node
// gets its own /14 block of it as spec.podCIDR (as the node IPAM
// controller would assign), so pod IPs stay unique across nodes. Block 0
// (127.0.0.0/14) skips 127.0.x.x, the host's own loopback addresses.

const (
	podCIDRPrefix = 14
	podCIDRBlocks = 64 // 256 / 4 second-octet values per block
)

// podCIDRBlock returns the block index of cidr, or -1 when it is not one
// of the agent's loopback blocks.
func podCIDRBlock(cidr string) int {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return -1
	}
	ones, bits := n.Mask.Size()
	v4 := ip.To4()
	if v4 == nil || bits != 32 || ones != podCIDRPrefix || v4[0] != 127 || !ip.Equal(n.IP) {
		return -1
	}
	return int(v4[1]) / 4
}

func podCIDRString(block int) string { return fmt.Sprintf("127.%d.0.0/%d", block*4, podCIDRPrefix) }

// pickPodCIDRBlock is the lowest block no other node uses; -1 when all are
// taken.
func pickPodCIDRBlock(self string, nodes []corev1.Node) int {
	used := map[int]bool{}
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		for _, c := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
			if b := podCIDRBlock(c); b >= 0 {
				used[b] = true
			}
		}
	}
	for b := 0; b < podCIDRBlocks; b++ {
		if !used[b] {
			return b
		}
	}
	return -1
}

// blockRange is the first and last pod IP of a block.
func blockRange(block int) (uint32, uint32) {
	first := uint32(127)<<24 | uint32(block*4)<<16 | 1
	if block == 0 {
		first = loopFirst
	}
	last := uint32(127)<<24 | uint32(block*4+3)<<16 | 255<<8 | 254
	return first, last
}

// choosePodCIDR returns the pod CIDR the node should have: its own when set,
// else a free block. "" when every block is taken.
func (a *Agent) choosePodCIDR(ctx context.Context, existing *corev1.Node) (string, error) {
	if existing != nil && podCIDRBlock(existing.Spec.PodCIDR) >= 0 {
		return existing.Spec.PodCIDR, nil
	}
	list, err := a.cfg.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes for a pod CIDR: %w", err)
	}
	b := pickPodCIDRBlock(a.cfg.NodeName, list.Items)
	if b < 0 {
		a.log.Info("every loopback pod CIDR block is taken: pod IPs may repeat across nodes")
		return "", nil
	}
	return podCIDRString(b), nil
}

// usePodCIDR switches the agent's own IP allocator to the node's block.
func (a *Agent) usePodCIDR(node *corev1.Node) {
	if !a.ownIPs {
		return
	}
	b := podCIDRBlock(node.Spec.PodCIDR)
	if b < 0 {
		return
	}
	a.cfg.PodIPs = newLoopbackRange(blockRange(b))
}
