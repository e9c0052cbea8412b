#!/usr/bin/env bash
# Regenerates batchlet's OpenAPI documents:
#  1. openapi-gen (the k8s.io/kube-openapi version pinned in go.mod) writes
#     GetOpenAPIDefinitions for the Kubernetes API packages batchlet serves to
#     apiserver/openapi/internal/k8sdefs/zz_generated.openapi.go;
#  2. apiserver/openapi/internal/gen combines them with the JobSet module's
#     generated definitions, apiextensions-apiserver's (CRDs) and the served
#     resources of apiserver/registry, and writes the v2 and v3
#     documents to apiserver/openapi/data/, which package openapi embeds.
# Needs the Go module proxy the first time (openapi-gen's own dependencies).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

version=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)
packages=(
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/version
  k8s.io/apimachinery/pkg/api/resource
  k8s.io/apimachinery/pkg/util/intstr
  k8s.io/api/core/v1
  k8s.io/api/batch/v1
  k8s.io/api/events/v1
  k8s.io/api/discovery/v1
  k8s.io/api/authentication/v1
  k8s.io/api/authorization/v1
  k8s.io/api/coordination/v1
  k8s.io/api/policy/v1
  k8s.io/api/rbac/v1
  k8s.io/api/certificates/v1
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp/bin" GOFLAGS=-mod=mod go install "k8s.io/kube-openapi/cmd/openapi-gen@${version}"

"$tmp/bin/openapi-gen" \
  --output-dir "$root/apiserver/openapi/internal/k8sdefs" \
  --output-pkg github.com/batchlet/batchlet/apiserver/openapi/internal/k8sdefs \
  --output-file zz_generated.openapi.go \
  --go-header-file "$root/hack/boilerplate.go.txt" \
  --report-filename "$tmp/api-violations.txt" \
  "${packages[@]}"

go run ./apiserver/openapi/internal/gen "$root/apiserver/openapi/data"
echo "OpenAPI definitions and documents regenerated."
