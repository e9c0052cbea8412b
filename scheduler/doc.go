// Package scheduler binds pending pods to nodes like kube-scheduler's default
// profile: resource fit, nodeSelector, required node affinity, taints and
// tolerations, priority order and preemption. It keeps node accounting in
// memory (with assumed pods) and binds through the pods/binding subresource.
// It talks to the API only through client-go.
package scheduler
