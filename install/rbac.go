package install

import (
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
)

// eventRules let a component record events through both event APIs
// (client-go's core/v1 recorder and the events/v1 broadcaster).
var eventRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
}

// controllerRules are the permissions of each of batchlet's controllers,
// by the name `batchlet controllers --controllers` takes. They follow the
// bootstrap roles upstream gives the same controllers
// (system:controller:job-controller, …) and the JobSet manager's role.
var controllerRules = map[string][]rbacv1.PolicyRule{
	"job": {
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs/status", "jobs/finalizers"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch", "update"}},
	},
	"jobset": {
		{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets/status", "jobsets/finalizers"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
	},
	"ttl-after-finished": {
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "delete"}},
	},
	"garbage-collector": {
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}},
	},
	"scheduler": {
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/binding", "pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
	},
	"podgc": {
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
	},
	"nodelifecycle": {
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "delete", "patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "delete"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}},
	},
	"result-retention": {
		{APIGroups: []string{"results.batchlet.dev"}, Resources: []string{"containerresults"}, Verbs: []string{"list", "delete"}},
	},
	"root-ca-cert-publisher": {
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	},
}

// agentRules are what a node agent (`batchlet agent`) needs: its Node and
// Lease, the pods bound to it and what their volumes reference. Upstream
// narrows a kubelet to its own node with the Node authorizer; RBAC alone
// cannot, so this role is as wide as system:node without it.
var agentRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	// The kubernetes Service's endpoint, which pods' KUBERNETES_SERVICE_HOST
	// names (watched: the agent keeps it in an informer).
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update", "patch"}},
	// The record of each terminated container (package results).
	{APIGroups: []string{"results.batchlet.dev"}, Resources: []string{"containerresults"}, Verbs: []string{"create"}},
	// The built-in work queues of the pods it runs (package workqueue).
	{APIGroups: []string{"batchlet.dev"}, Resources: []string{"workqueues"}, Verbs: []string{"get", "create", "update", "delete"}},
	eventRules[0], eventRules[1],
}

// ResultsViewName is the ClusterRole that adds reading ContainerResults
// to the cluster's view (and so edit and admin) role by aggregation.
const ResultsViewName = "batchlet:results-view"

// resultsViewRules are aggregated into view.
var resultsViewRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"results.batchlet.dev"}, Resources: []string{"containerresults"}, Verbs: []string{"get", "list", "watch"}},
}

// leaderElectionRules let the controllers' replicas elect a leader over a
// Lease in their own namespace.
var leaderElectionRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
}

// rulesFor returns the union of the rules of the named controllers, plus
// event recording; an unknown name is an error.
func rulesFor(controllers []string) ([]rbacv1.PolicyRule, error) {
	names := append([]string(nil), controllers...)
	sort.Strings(names)
	var rules []rbacv1.PolicyRule
	for _, name := range names {
		r, ok := controllerRules[name]
		if !ok {
			return nil, fmt.Errorf("unknown controller %q (known: %v)", name, knownControllers())
		}
		rules = append(rules, r...)
	}
	return append(rules, eventRules...), nil
}

func knownControllers() []string {
	names := make([]string, 0, len(controllerRules))
	for name := range controllerRules {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
