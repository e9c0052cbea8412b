#!/usr/bin/env bash
# Regenerates the JobSet CustomResourceDefinition that `batchlet crds` prints
# and `batchlet install` applies, from the Go types of the JobSet module
# version pinned in go.mod, with controller-gen (the version JobSet's own
# Makefile pins). Needs the Go module proxy.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
controller_tools=v0.17.2
jobset=$(go list -m -f '{{.Version}}' sigs.k8s.io/jobset)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp/bin" GOFLAGS= go install "sigs.k8s.io/controller-tools/cmd/controller-gen@${controller_tools}"

# controller-gen loads the API package from a module that requires it.
mkdir "$tmp/mod"
cat >"$tmp/mod/go.mod" <<EOM
module crdgen

go $(go list -m -f '{{.GoVersion}}')

require sigs.k8s.io/jobset ${jobset}
EOM
printf 'package crdgen\n\nimport _ "sigs.k8s.io/jobset/api/jobset/v1alpha2"\n' >"$tmp/mod/gen.go"
cp go.sum "$tmp/mod/"
(
  cd "$tmp/mod"
  GOFLAGS=-mod=mod go mod tidy
  "$tmp/bin/controller-gen" crd:generateEmbeddedObjectMeta=true \
    paths=sigs.k8s.io/jobset/api/jobset/v1alpha2 output:crd:dir="$root/install/crds"
)
echo "wrote install/crds/ for sigs.k8s.io/jobset ${jobset}"
