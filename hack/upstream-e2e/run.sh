#!/usr/bin/env bash
# Runs upstream's own `[sig-apps] Job` e2e specs (Kubernetes $KUBE_VERSION,
# test/e2e/apps built by build.sh) against a fresh `batchlet server`, with
# no framework flag beyond --provider skeleton.
#
# The server runs containers from their images (--runtime=image). The two
# images the Job specs use, registry.k8s.io/e2e-test-images/busybox and
# registry.k8s.io/pause, are built on this machine (images/: busybox from
# Debian's busybox-static, pause from pause/) and loaded into the server's
# image store, so nothing is pulled. RUNTIME=process runs them as host
# processes instead (image-dependent specs then fail).
#
#   hack/upstream-e2e/run.sh                  # the Job specs
#   FOCUS='\[sig-apps\] Job should run a job to completion' hack/upstream-e2e/run.sh
#   KUBECONFIG=~/.batchlet/kubeconfig EXTERNAL=1 hack/upstream-e2e/run.sh   # a server you started
#
# Prints ginkgo's report; the JUnit file lands in $REPORT_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."

FOCUS=${FOCUS:-'\[sig-apps\] Job'}
SKIP=${SKIP:-'\[Feature:|\[Alpha\]|\[Disruptive\]|\[Flaky\]'}
work=$(mktemp -d /tmp/batchlet-upstream-e2e.XXXXXX)
REPORT_DIR=${REPORT_DIR:-$work/report}
mkdir -p "$REPORT_DIR"

RUNTIME=${RUNTIME:-image}
e2e_test=$(hack/upstream-e2e/build.sh)
go build -o "$work/" ./cmd/batchlet ./cmd/batchlet-shim
if [ "$RUNTIME" = image ] && [ -z "${EXTERNAL:-}" ]; then
  CGO_ENABLED=0 go build -o "$work/pause" ./hack/upstream-e2e/pause
  go run ./hack/upstream-e2e/images --busybox "${BUSYBOX:-/bin/busybox}" --pause "$work/pause" --out "$work/images.tar"
  "$work/batchlet" images load --data-dir "$work/data" "$work/images.tar"
fi

server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if [ -z "${EXTERNAL:-}" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$work/batchlet" server --data-dir "$work/data" --port "$port" --runtime "$RUNTIME" ${SERVER_ARGS:-} >"$work/server.log" 2>&1 &
  server_pid=$!
  export KUBECONFIG=$work/data/kubeconfig
  for _ in $(seq 1 100); do
    [ -f "$KUBECONFIG" ] && kubectl get --raw /readyz >/dev/null 2>&1 && break
    sleep 0.2
  done
  kubectl wait --for=condition=Ready node --all --timeout=60s >/dev/null
  echo "batchlet server on port $port (log: $work/server.log)"
fi

"$e2e_test" --provider skeleton --kubeconfig "$KUBECONFIG" \
  --ginkgo.focus "$FOCUS" --ginkgo.skip "$SKIP" \
  --ginkgo.no-color --ginkgo.silence-skips --ginkgo.timeout 2h --report-dir "$REPORT_DIR" "$@"
