#!/usr/bin/env bash
# The real-cluster tier (the release check): builds (or reuses) etcd and
# kube-apiserver from the Go module proxy, then runs the e2e tests tagged
# realcluster: batchlet's controllers and agent against that API server,
# with the RBAC of `batchlet install`, on the seed examples.
#
#   hack/realcluster/test.sh [go test flags, e.g. -run JobSet -v]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(hack/realcluster/build.sh)
BATCHLET_REALCLUSTER_BIN=$bin go test -tags realcluster -count=1 -timeout 30m -run 'TestRealCluster' "$@" ./e2e/
