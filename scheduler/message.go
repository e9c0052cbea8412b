package scheduler

import (
	"fmt"
	"sort"
	"strings"
)

// Messages kube-scheduler puts on unschedulable pods.
const (
	msgNoNodes           = "no nodes available to schedule pods"
	msgNoVictims         = "No preemption victims found for incoming pod"
	msgPreemptionUseless = "Preemption is not helpful for scheduling"
	msgPreemptNever      = "not eligible due to preemptionPolicy=Never."
	msgGated             = "Scheduling is blocked due to non-empty scheduling gates"
)

// histogram counts how many nodes gave each reason.
type histogram map[string]int

// String renders "N reason, M reason" sorted like upstream (by the whole string).
func (h histogram) String() string {
	parts := make([]string, 0, len(h))
	for reason, n := range h {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// fitErrorMessage renders upstream's FitError:
// "0/N nodes are available: <histogram>. <postFilter>."
func fitErrorMessage(numNodes int, reasons histogram, postFilter string) string {
	msg := fmt.Sprintf("0/%d nodes are available:", numNodes)
	if len(reasons) > 0 {
		msg += " " + reasons.String() + "."
	}
	if postFilter != "" {
		msg += " " + postFilter + "."
	}
	return msg
}

// preemptionMessage renders the PostFilter (preemption) part of a FitError.
func preemptionMessage(numNodes int, reasons histogram) string {
	return "preemption: " + fitErrorMessage(numNodes, reasons, "")
}
