// Package nodelifecycle watches node heartbeats (coordination.k8s.io Leases in
// kube-node-lease): a node whose Lease stops renewing for the grace period
// gets Ready=Unknown and the unreachable taints; a NoExecute taint manager
// evicts the pods that do not tolerate a node's NoExecute taints.
package nodelifecycle
