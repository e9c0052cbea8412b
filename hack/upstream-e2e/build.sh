#!/usr/bin/env bash
# Builds upstream's own e2e test binary, e2e.test of Kubernetes
# $KUBE_VERSION, from the Go module proxy (k8s.io/kubernetes with its
# staging modules replaced by the matching v0.x releases), and prints its
# path. Later runs reuse it (a build takes 10–20 minutes of CPU on a
# 2-core machine).
#
#   hack/upstream-e2e/build.sh
set -euo pipefail
. "$(dirname "$0")/../lib/kube-module.sh"

KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
cache=${BATCHLET_UPSTREAM_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchlet/upstream-e2e-$KUBE_VERSION}
if [ -x "$cache/e2e.test" ]; then
  echo "$cache/e2e.test"
  exit 0
fi
mod=$cache/mod
mkdir -p "$mod"

kube_module_gomod batchlet.dev/upstreame2e "$KUBE_VERSION" "$cache" >"$mod/go.mod"
cat >"$mod/tools.go" <<'EOM'
//go:build tools

package upstreame2e

import _ "k8s.io/kubernetes/test/e2e"
EOM
cd "$mod"
GOFLAGS=-mod=mod go mod tidy >&2
GOFLAGS=-mod=mod go test -c -trimpath -o "$cache/e2e.test" k8s.io/kubernetes/test/e2e >&2
echo "$cache/e2e.test"
