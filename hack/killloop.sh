#!/usr/bin/env bash
# hack/killloop.sh: kill -9 `batchlet server` again and again during one
# large Indexed Job and check that nothing is lost or counted twice: the Job
# completes with succeeded == completions and completedIndexes 0-(N-1), and
# every index's pod started exactly once (the pods' shims keep them running
# while the server is down). e2e/killloop_test.go is the same scenario at CI
# size.
#
#   hack/killloop.sh                       # 10,000 completions, 50 kills
#   COMPLETIONS=2000 KILLS=50 hack/killloop.sh
#
# Environment: COMPLETIONS (10000), PARALLELISM (100), KILLS (50, the least
# number of kills), SEED (the clock; replays the kill delays), BATCHLET (a
# built binary; default: go build), PORT (a free one), KEEP=1 keeps the data
# dir.
set -euo pipefail

COMPLETIONS=${COMPLETIONS:-10000}
PARALLELISM=${PARALLELISM:-100}
KILLS=${KILLS:-50}
SEED=${SEED:-$(date +%s)}
PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}

work=$(mktemp -d /tmp/batchlet-killloop.XXXXXX)
data=$work/data
markers=$work/markers
mkdir -p "$data" "$markers"
export KUBECONFIG=$data/kubeconfig

if [[ -z ${BATCHLET:-} ]]; then
  BATCHLET=$work/batchlet
  (cd "$(dirname "$0")/.." && go build -o "$work/" ./cmd/batchlet ./cmd/batchlet-shim)
fi

server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  # The shims of this data dir (and so their pods) outlive the server.
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    if [[ $cmd == "batchlet-shim $data/"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  if [[ ${KEEP:-} == 1 ]]; then
    echo "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "server log: $work/server.log (tail)" >&2
  tail -20 "$work/server.log" >&2
  KEEP=1
  exit 1
}

# start runs the server on the data dir and waits until the API answers.
start() {
  "$BATCHLET" server --data-dir "$data" --port "$PORT" --log-level warn >>"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 600); do
    if [[ -f $KUBECONFIG ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
      return
    fi
    sleep 0.1
  done
  fail "server not ready after 60s"
}

succeeded() {
  local n
  n=$(kubectl get job/loop -o 'jsonpath={.status.succeeded}' 2>/dev/null) || n=0
  echo "${n:-0}"
}

# wait_progress waits until succeeded exceeds $1 and reaches $2, or only
# the held pods are left.
wait_progress() {
  local since=$1 share=$2 n
  for _ in $(seq 6000); do
    n=$(succeeded)
    if (((n > since && n >= share) || n == held)); then
      echo "$n"
      return
    fi
    sleep 0.1
  done
  fail "no progress past $since (share $share) in 600s"
}

# The pods of the last PARALLELISM indexes wait for markers/release, so the
# Job cannot complete before the last kill however slow the machine is.
held=$((COMPLETIONS - PARALLELISM))
echo "killloop: completions=$COMPLETIONS parallelism=$PARALLELISM kills=$KILLS seed=$SEED binary=$BATCHLET"
RANDOM=$SEED
SECONDS=0
start
kubectl apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: loop
spec:
  completions: $COMPLETIONS
  parallelism: $PARALLELISM
  completionMode: Indexed
  backoffLimit: 1000000
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo \$JOB_COMPLETION_INDEX >> /markers/\$JOB_COMPLETION_INDEX; if [ \$JOB_COMPLETION_INDEX -ge $held ]; then until [ -f /markers/release ]; do sleep 0.1; done; fi; sleep \$(( JOB_COMPLETION_INDEX % 3 + 1 )).\$(( JOB_COMPLETION_INDEX % 10 ))"]
        volumeMounts:
        - name: markers
          mountPath: /markers
      volumes:
      - name: markers
        hostPath:
          path: $markers
EOF

since=0
for ((kill = 1; kill <= KILLS; kill++)); do
  # Each kill waits for progress since the last restart and for its share
  # of the completions (so the kills spread over the Job), then a seeded
  # random 0-400ms so it lands anywhere in the pods' and controllers' work.
  before=$(wait_progress "$since" $((kill * COMPLETIONS / (KILLS + 10))))
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  kill -KILL "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  start
  since=$(succeeded)
  echo "kill $kill: succeeded $before before, $since after the restart"
done

touch "$markers/release"
kubectl wait --for=condition=complete job/loop --timeout=3600s >/dev/null || fail "the Job did not complete"
wall=$SECONDS

status=$(kubectl get job/loop -o 'jsonpath={.status.succeeded}|{.status.failed}|{.status.completedIndexes}')
want="$COMPLETIONS||0-$((COMPLETIONS - 1))"
started=$(find "$markers" -type f ! -name release | wc -l)
reran=$(find "$markers" -type f ! -name release -exec grep -Hc '' {} + | awk -F: '$NF > 1' | wc -l)
pods=$(kubectl get pods -l job-name=loop -o name | wc -l)

echo "kills survived:   $KILLS"
echo "job status:       succeeded|failed|completedIndexes = $status (want $want)"
echo "indexes started:  $started of $COMPLETIONS"
echo "pods re-run:      $reran (indexes started more than once); $pods pods for $COMPLETIONS completions"
echo "wall time:        ${wall}s (server start to Job complete)"
if [[ $status != "$want" || $started != "$COMPLETIONS" || $reran != 0 || $pods != "$COMPLETIONS" ]]; then
  if ((reran > 0)); then
    find "$markers" -type f ! -name release -exec grep -Hc '' {} + | awk -F: '$NF > 1 {print $1}' | head -20 | while read -r f; do
      idx=$(basename "$f")
      echo "index $idx ran more than once; its pods:"
      kubectl get pods -l job-name=loop \
        -o "jsonpath={range .items[?(@.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index==\"$idx\")]}"'  {.metadata.name} {.status.phase} {.status.containerStatuses[0].state.terminated.reason} exit={.status.containerStatuses[0].state.terminated.exitCode}{"\n"}{end}'
    done
  fi
  fail "counts are not exact"
fi
echo "OK"
