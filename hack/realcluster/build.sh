#!/usr/bin/env bash
# Builds a real Kubernetes control plane from the Go module proxy: etcd and
# kube-apiserver of Kubernetes $KUBE_VERSION (k8s.io/kubernetes with its
# staging modules replaced by the matching v0.x releases). The binaries land
# in $BATCHLET_REALCLUSTER_CACHE/bin, which later runs reuse (a rebuild takes
# 5–15 minutes of CPU on a 2-core machine; a cached one, nothing).
#
#   hack/realcluster/build.sh            # prints the bin directory
set -euo pipefail
. "$(dirname "$0")/../lib/kube-module.sh"

KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
cache=${BATCHLET_REALCLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchlet/realcluster-$KUBE_VERSION}
bin=$cache/bin
if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ]; then
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
cat >"$mod/tools.go" <<'EOM'
//go:build tools

package realcluster

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
EOM
cd "$mod"
GOFLAGS=-mod=mod go mod tidy >&2
GOFLAGS=-mod=mod go build -trimpath -o "$bin/etcd" ./etcd >&2
GOFLAGS=-mod=mod go build -trimpath -o "$bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
echo "$bin"
