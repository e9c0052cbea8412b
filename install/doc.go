// Package install renders and applies what batchlet's controllers and node
// agents need on a real Kubernetes cluster: the JobSet
// CustomResourceDefinition (generated from the JobSet module's Go types by
// hack/update-crds.sh), RBAC for the selected controllers and for agents,
// and optionally a Deployment that runs `batchlet controllers` with leader
// election, so that a user who outgrows one machine carries the same
// controllers to a cluster without a rewrite.
package install
