package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConditionEvents(t *testing.T) {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s}
	}
	healthy := []corev1.NodeCondition{c(corev1.NodeMemoryPressure, "False"), c(corev1.NodeDiskPressure, "False"),
		c(corev1.NodePIDPressure, "False"), c(corev1.NodeReady, "True")}
	unknown := []corev1.NodeCondition{c(corev1.NodeMemoryPressure, "Unknown"), c(corev1.NodeDiskPressure, "Unknown"),
		c(corev1.NodePIDPressure, "Unknown"), c(corev1.NodeReady, "Unknown")}
	for name, tc := range map[string]struct {
		old  []corev1.NodeCondition
		want []string
	}{
		"new node":         {nil, []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"}},
		"heartbeat":        {healthy, nil},
		"back from silent": {unknown, []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"}},
		"only Ready back":  {append(slices.Clone(healthy[:3]), c(corev1.NodeReady, "Unknown")), []string{"NodeReady"}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := conditionEvents(tc.old, healthy); !slices.Equal(got, tc.want) {
				t.Fatalf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

// A starting agent records the kubelet's node events against its node.
func TestNodeEventsOnStart(t *testing.T) {
	h := newHarness(t)
	want := []string{
		"Normal/Starting/Starting kubelet.",
		"Normal/NodeAllocatableEnforced/Updated Node Allocatable limit across pods",
		"Normal/NodeHasSufficientMemory/Node node-1 status is now: NodeHasSufficientMemory",
		"Normal/NodeHasNoDiskPressure/Node node-1 status is now: NodeHasNoDiskPressure",
		"Normal/NodeHasSufficientPID/Node node-1 status is now: NodeHasSufficientPID",
		"Normal/NodeReady/Node node-1 status is now: NodeReady",
	}
	var got []string
	h.eventually("node events", func() bool {
		list, err := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		got = got[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "node-1" && string(e.InvolvedObject.UID) == "node-1" &&
				e.Source.Component == "kubelet" {
				got = append(got, fmt.Sprintf("%s/%s/%s", e.Type, e.Reason, e.Message))
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	if len(got) != len(want) {
		t.Errorf("node events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
