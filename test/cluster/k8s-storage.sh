#!/usr/bin/env bash
# k8s-storage.sh (`make e2e-k8s-storage`): Kubernetes' own storage e2e suite
# (e2e.test's "External Storage" tests, driven by -storage.testdriver=FILE)
# against chainvol on the one-node cluster of `make e2e-cluster`. Builds (or
# reuses) the cluster's binaries and e2e.test, ginkgo and agnhost from the
# same Kubernetes module, brings the cluster up, adds the suite's images, an
# S3 bucket (versitygw) as the driver's default backup target, and runs
# the suite twice: every claimed capability with local snapshots
# (storage/driver-local.yaml), then the snapshot tests again with a backup
# class (storage/driver-backup.yaml: restores read S3 through the real
# external-provisioner and snapshotter). storage/skip.txt lists what is left
# out and why. Tears everything down, pass or fail; the counts come last.
# Needs root; see test/cluster/README.md and docs/TESTING.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"
source "$HERE/lib/images.sh"
source "$HERE/lib/cluster.sh"
source "$HERE/storage/images.sh"
S=$HERE/storage
source "$HERE/lib/node_b.sh"
# CLUSTER_NODES=2 (issue 31): the suite's images go to both nodes and the
# second node loses its taint, so the suite's multi-node specs (multiVolume
# "on different node", topology) have two nodes to spread over.

# Parallel ginkgo processes: most of a spec's time is waiting for pods and
# claims, so 3 keep two shared cores busy without starving the cluster.
PROCS=${K8S_STORAGE_PROCS:-3}
# Runs, in order (local, backup); K8S_STORAGE_RUNS=backup for one.
RUNS=${K8S_STORAGE_RUNS:-local backup}
# Extra regex ANDed to the focus, to rerun a few specs by hand.
ONLY=${K8S_STORAGE_FOCUS:-}
FOCUS='External.Storage \[Driver: chainvol\.csi\.io\]'
# The backup run repeats what takes snapshots: the snapshottable suite and
# the provisioning and multivolume specs restoring from a snapshot.
BACKUP_FOCUS="$FOCUS.*([Ss]napshot)"
S3_ADDR=$NODE_IP:9000
S3_BUCKET=chainvol-e2e
OUT=$CACHE/logs/k8s-storage-$(date -u +%Y%m%dT%H%M%SZ)
T_START=$SECONDS
TIMES=()

# on_exit: keep the cluster's logs with the run's output, tear down, then
# the times and the counts, last.
on_exit() {
  local rc=$?
  set +e
  if [[ -d $RUN/logs ]]; then
    cp -r "$RUN/logs" "$OUT/cluster"
    if [[ -x $KUBECTL && -f $KUBECONFIG ]]; then
      timeout 20 "$KUBECTL" -n chainvol-system logs ds/chainvol-node --all-containers --tail=-1 > "$OUT/cluster/driver-pod.txt" 2>&1
    fi
  fi
  log "tearing down"
  bash "$HERE/teardown.sh" || rc=1
  rm -f "$CACHE/logs/k8s-storage-last" && ln -s "$OUT" "$CACHE/logs/k8s-storage-last"
  echo
  echo "=== e2e-k8s-storage ==="
  local t; for t in "${TIMES[@]}"; do echo "$t"; done
  echo "total wall time: $((SECONDS - T_START))s; output (JUnit, logs) in $OUT"
  local reports=() r
  for r in $RUNS; do reports+=("$r" "$(run_focus "$r")" "$OUT/$r/junit_01.xml"); done
  python3 "$S/summary.py" "$S/skip.txt" "${reports[@]}" || rc=1
  exit $rc
}

# run_focus RUN: the ginkgo focus of a run (local, backup).
# K8S_STORAGE_FOCUS narrows either (no lookahead in Go regexps: the backup
# run's "snapshot" may come before or after it in a spec's name).
run_focus() {
  case $1:${ONLY:+only} in
    local:) echo "$FOCUS" ;;
    local:only) echo "$FOCUS.*($ONLY)" ;;
    backup:) echo "$BACKUP_FOCUS" ;;
    backup:only) echo "$FOCUS.*(([Ss]napshot).*($ONLY)|($ONLY).*([Ss]napshot))" ;;
  esac
}

# timed NAME CMD...: run a stage and record its time; a failure ends the run.
timed() {
  local name=$1 t0=$SECONDS; shift
  log "== $name"
  local rc=0; "$@" || rc=$?
  TIMES+=("$(printf '%-5s %-52s %5ds' "$( ((rc == 0)) && echo ok || echo FAIL)" "$name" $((SECONDS - t0)))")
  return $rc
}

# s3_up: versitygw (bin/versitygw, as the e2e tests use it) on the node's
# address inside the cluster's network namespace, where the driver's pod
# reaches it; a bucket; the driver's credentials Secret.
s3_up() {
  local ak sk
  ak=AK$(openssl rand -hex 9); sk=$(openssl rand -hex 20)
  mkdir -p "$RUN/s3"
  # Keys through the environment, not argv.
  ( export ROOT_ACCESS_KEY_ID=$ak ROOT_SECRET_ACCESS_KEY=$sk
    start versitygw "$REPO/bin/versitygw" --port "$S3_ADDR" --health /health --quiet posix "$RUN/s3" )
  wait_for versitygw 30 nsenter --net="$NS_PATH" curl -sf "http://$S3_ADDR/health"
  # CreateBucket, signed by curl; versitygw wants the (empty) payload's hash.
  nsenter --net="$NS_PATH" curl -sf -X PUT --aws-sigv4 aws:amz:us-east-1:s3 --user "$ak:$sk" \
    -H "x-amz-content-sha256: $(sha256sum < /dev/null | cut -d' ' -f1)" "http://$S3_ADDR/$S3_BUCKET" \
    || die "cannot create bucket $S3_BUCKET"
  printf 'accessKeyID=%s\nsecretAccessKey=%s\n' "$ak" "$sk" > "$RUN/s3-credentials"
  "$KUBECTL" -n chainvol-system create secret generic chainvol-s3-credentials \
    --from-file=credentials="$RUN/s3-credentials" >/dev/null
  rm -f "$RUN/s3-credentials"
}

# driver_s3: the chart make image stamped (install_driver), again, with storage/values-s3.yaml on top of the
# cluster's values (the S3 target as the default one), as a user upgrades
# a release; wait for the new pod and its registration.
driver_s3() {
  (cd "$REPO" && go run ./hack/helmtemplate -n chainvol-system "${CHART_VALUES[@]}" \
    -f test/cluster/storage/values-s3.yaml bin/image/chart/chainvol) > "$RUN/chainvol-s3.yaml"
  apply_driver "$RUN/chainvol-s3.yaml" "chainvol DaemonSet with the S3 target"
}

# suite_images: the suite's images on the first node, and with two nodes
# on the second too, which then takes the suite's pods (untainted).
suite_images() {
  local before; before=$(wc -l < "$RUN/images.list")
  e2e_images
  two_nodes || return 0
  import_images_b "$before"
  untaint_node_b
}

# skip_regex: the patterns of storage/skip.txt, one alternation.
skip_regex() {
  sed -e '/^\s*#/d' -e '/^\s*$/d' -e 's/ # .*//' -e 's/\s*$//' "$S/skip.txt" | paste -sd'|'
}

# suite NAME: one ginkgo run of e2e.test with storage/driver-NAME.yaml,
# inside the cluster's network namespace (the apiserver's address is
# there). Full output in $OUT/NAME/e2e.log; the console gets the verdicts.
suite() {
  local name=$1 focus dir=$OUT/$1
  focus=$(run_focus "$name")
  mkdir -p "$dir"
  # ginkgo starts e2e.test in the binary's directory, and the suite reads
  # the snapshot class's file from the working directory: the definition
  # goes with the run's output, its class files made absolute.
  sed "s#test/cluster/storage/#$S/#" "$S/driver-$name.yaml" > "$dir/driver.yaml"
  log "ginkgo --procs=$PROCS, focus: $focus; log: $dir/e2e.log"
  local rc=0
  (nsenter --net="$NS_PATH" "$BIN/ginkgo" --procs="$PROCS" --timeout=2h --no-color \
    --focus="$focus" --skip="$(skip_regex)" "$BIN/e2e.test" -- \
    --kubeconfig="$KUBECONFIG" --provider=skeleton --repo-root="$REPO" --kubectl-path="$BIN/kubectl" \
    --report-dir="$dir" --storage.testdriver="$dir/driver.yaml" --disable-log-dump) \
    > "$dir/e2e.log" 2>&1 || rc=$?
  grep -E '^\s*\[(FAIL|PANICKED|TIMEDOUT)\]|^Ran [0-9]+ of|^(SUCCESS|FAIL)!' "$dir/e2e.log" | sort -u >&2 || true
  return $rc
}

[[ $(id -u) == 0 ]] || die "needs root (loop devices, mounts, network namespaces)"
mkdir -p "$OUT"
trap on_exit EXIT
trap 'exit 130' INT TERM
timed "build the cluster (cached in $CACHE)" bash "$HERE/build.sh"
timed "build e2e.test, ginkgo, agnhost (cached)" bash "$S/build.sh"
timed "cluster up" bash "$HERE/up.sh"
timed "the suite's images" suite_images
timed "S3 bucket (versitygw), the driver's default target" s3_up
timed "driver with the S3 target" driver_s3
rc=0
for r in $RUNS; do
  case $r in
    local) timed "suite: every claimed capability, local snapshots" suite local || rc=1 ;;
    backup) timed "suite: snapshot specs, backup class (S3)" suite backup || rc=1 ;;
    *) die "unknown run $r (local, backup)" ;;
  esac
done
exit $rc
