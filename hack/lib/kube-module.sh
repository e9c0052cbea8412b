# kube_module_gomod MODULE VERSION CACHE prints a go.mod for module MODULE
# that requires k8s.io/kubernetes VERSION with its staging modules (which
# k8s.io/kubernetes replaces with ./staging/...) replaced by their published
# releases, k8s.io/<name> v0.<minor>.<patch>. CACHE keeps the download's
# metadata. Sourced by hack/realcluster/build.sh and hack/upstream-e2e/build.sh.
kube_module_gomod() {
  local module=$1 version=$2 cache=$3
  GOFLAGS= go mod download -json "k8s.io/kubernetes@$version" >"$cache/kubernetes.json"
  local gomod staging_version
  gomod=$(sed -n 's/.*"GoMod": "\(.*\)",/\1/p' "$cache/kubernetes.json")
  staging_version=v0.${version#v1.}
  echo "module $module"
  echo
  echo "go $(go env GOVERSION | sed 's/^go//')"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  grep -E '=> \./staging/src/' "$gomod" | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
}
