#!/usr/bin/env bash
# Builds a real Kubernetes control plane from the Go module proxy: etcd and
# kube-apiserver of Kubernetes $KUBE_VERSION (k8s.io/kubernetes with its
# staging modules replaced by the matching v0.x releases). The binaries land
# in $BATCHLET_REALCLUSTER_CACHE/bin, which later runs reuse (a rebuild takes
# 5–15 minutes of CPU on a 2-core machine; a cached one, nothing).
#
# With --peer (or BATCHLET_REALCLUSTER_PEER=1) it also builds
# kube-controller-manager and kube-scheduler, which `batchlet bench peer`
# runs as the upstream control plane; the default build (CI's) stays
# etcd and kube-apiserver only.
#
#   hack/realcluster/build.sh            # prints the bin directory
#   hack/realcluster/build.sh --peer     # ... with the peer binaries too
set -euo pipefail
. "$(dirname "$0")/../lib/kube-module.sh"

peer=${BATCHLET_REALCLUSTER_PEER:-}
if [ "${1:-}" = --peer ]; then
  peer=1
fi

KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
cache=${BATCHLET_REALCLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchlet/realcluster-$KUBE_VERSION}
bin=$cache/bin
want=(etcd kube-apiserver)
if [ -n "$peer" ]; then
  want+=(kube-controller-manager kube-scheduler)
fi
missing=
for b in "${want[@]}"; do
  [ -x "$bin/$b" ] || missing=1
done
if [ -z "$missing" ]; then
  echo "$bin"
  exit 0
fi
mod=$cache/mod
mkdir -p "$mod/etcd" "$bin"

kube_module_gomod batchlet.dev/realcluster "$KUBE_VERSION" "$cache" >"$mod/go.mod"

# etcd's server module is already in k8s.io/kubernetes's build list; its
# etcdmain package is the etcd binary.
cat >"$mod/etcd/main.go" <<'EOM'
// Command etcd is etcd's server, built from the version Kubernetes pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOM
{
  printf '//go:build tools\n\npackage realcluster\n\n'
  for b in "${want[@]}"; do
    [ "$b" = etcd ] || echo "import _ \"k8s.io/kubernetes/cmd/$b\""
  done
} >"$mod/tools.go"
cd "$mod"
GOFLAGS=-mod=mod go mod tidy >&2
# Each binary is built only when missing, so --peer on a cache CI filled
# adds the two peer binaries without rebuilding the others.
[ -x "$bin/etcd" ] || GOFLAGS=-mod=mod go build -trimpath -o "$bin/etcd" ./etcd >&2
for b in "${want[@]}"; do
  [ "$b" = etcd ] || [ -x "$bin/$b" ] || GOFLAGS=-mod=mod go build -trimpath -o "$bin/$b" "k8s.io/kubernetes/cmd/$b" >&2
done
echo "$bin"
