#!/usr/bin/env bash
# e2e.sh (`make e2e-cluster`): chainvol under a real single-node Kubernetes
# (CLUSTER_NODES=2: two nodes on this machine, lib/node_b.sh).
# Builds (or reuses) the Kubernetes binaries, the CSI sidecars and the images,
# brings up etcd, the control plane, containerd and a kubelet in a network
# namespace of their own, installs the snapshot CRDs and controller and
# the image `make image` built through charts/chainvol (test/cluster/values.yaml),
# runs the scenarios and tears
# everything down, pass or fail. Needs root; see test/cluster/README.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"
source "$HERE/lib/kube.sh"
source "$HERE/lib/scenarios.sh"
source "$HERE/lib/scenarios_apps.sh"
source "$HERE/lib/scenarios_group.sh"
source "$HERE/lib/scenarios_lock.sh"
source "$HERE/lib/scenarios_populator.sh"
source "$HERE/lib/node_b.sh"
source "$HERE/lib/scenarios_nodes.sh"
source "$HERE/lib/scenarios_instant.sh"

# Size of the long-restore scenario's volume: enough random data that its
# restore outlives the provisioner's CreateVolume timeout (3s in
# test/cluster/values.yaml, so 2s of waiting per call) with a margin: restores
# ran at 360 MiB/s to 1 GiB/s on these 2-core machines.
BIG_GIB=${BIG_GIB:-5}
T_START=$SECONDS
RESULTS=()

# on_exit: keep the logs of the run, then remove everything it made.
on_exit() {
  local rc=$?
  set +e    # teardown must run to the end whatever fails on the way
  if [[ -d $RUN/logs ]]; then
    mkdir -p "$CACHE/logs" && rm -rf "$CACHE/logs/last-run" && cp -r "$RUN/logs" "$CACHE/logs/last-run"
    if [[ -x $KUBECTL && -f $KUBECONFIG ]] && (( rc != 0 )); then
      timeout 20 "$KUBECTL" get events -A --sort-by=.lastTimestamp > "$CACHE/logs/last-run/events.txt" 2>&1 || true
      timeout 20 "$KUBECTL" -n chainvol-system logs ds/chainvol-node --all-containers --tail=200 > "$CACHE/logs/last-run/driver-pod.txt" 2>&1 || true
      timeout 20 "$KUBECTL" -n chainvol-system logs deploy/chainvol-populator --tail=300 > "$CACHE/logs/last-run/populator-pod.txt" 2>&1 || true
    fi
  fi
  log "tearing down"
  bash "$HERE/teardown.sh" || rc=1
  echo
  echo "=== e2e-cluster results ==="
  local r; for r in "${RESULTS[@]}"; do echo "$r"; done
  echo "total wall time: $((SECONDS - T_START))s; logs in $CACHE/logs/last-run"
  (( rc == 0 )) && echo "e2e-cluster: PASS" || echo "e2e-cluster: FAIL"
  exit $rc
}

# step NAME FUNC: time a stage of the run; a failure ends the run. With
# E2E_ONLY (an extended regexp), scenarios whose NAME does not match it are
# skipped (listed as such); the build and the bring-up always run.
step() {
  local t0=$SECONDS
  if [[ -n ${E2E_ONLY:-} && $2 == s_* ]] && ! grep -qE -- "$E2E_ONLY" <<<"$1"; then
    RESULTS+=("$(printf 'skip  %-40s %4s' "$1" -)")
    return 0
  fi
  log "== $1"
  if "$2"; then
    RESULTS+=("$(printf 'ok    %-40s %4ds' "$1" $((SECONDS - t0)))")
  else
    RESULTS+=("$(printf 'FAIL  %-40s %4ds' "$1" $((SECONDS - t0)))")
    return 1
  fi
}

# Build and bring-up are processes of their own, so `set -e` holds in them.
build() { bash "$HERE/build.sh"; }
bring_up() { bash "$HERE/up.sh"; }

[[ $(id -u) == 0 ]] || die "needs root (loop devices, mounts, network namespaces)"
trap on_exit EXIT
trap 'exit 130' INT TERM
step "build binaries (cached in $CACHE)" build
step "cluster up: control plane, kubelet, chainvol" bring_up
step "provision: WaitForFirstConsumer claim, node affinity" s_provision
step "backups: full, then incremental" s_backups
step "restore after namespace loss: by class, by handle" s_restore
step "XFS backup into an ext4 class: refused" s_fstype_refused
step "long restore: progress events, then bound" s_long_restore
step "issue 27: instant restore read while hydrating" s_instant_restore
step "issue 27: instant read across a driver restart" s_instant_driver_restart
step "online expansion (XFS) seen by the pod" s_expand_online
step "XFS backup through the example restore class" s_example_restore_class
step "issue 14: import by handle after losing all" s_import_after_loss
step "issue 18: StatefulSet back from @before:T" s_statefulset_before
step "issue 18: Delete-class import frees bytes" s_retention
step "issue 31: StatefulSet restored from one group backup" s_statefulset_group
step "issue 26: populator fills a claim (WFFC)" s_pop_claim
step "issue 26: missing backup: reason, no leftovers" s_pop_missing
step "issue 26: StatefulSet from one BackupSource" s_pop_statefulset
step "issue 26: claim deleted mid-restore" s_pop_delete_mid
step "issue 26: populator killed mid-restore" s_pop_kill
# Issue 31's, with CLUSTER_NODES=2 only (lib/node_b.sh): the one-node
# scenarios above keep to the first node (the second is tainted).
if two_nodes; then
  step "two nodes: backup of A restored on B" s_nodes_restore_elsewhere
  step "two nodes: clone on B refused, made on A" s_nodes_clone_refused
  step "two nodes: StatefulSet spread, each member back" s_nodes_statefulset_spread
  step "two nodes: B drained, pool lost, claims back on A" s_nodes_drain_pool_lost
fi
# Issue 30's scenarios come last: they upgrade the driver with S3 targets.
step "issue 30: S3 targets (versioned, Object Lock)" s_lock_up
step "issue 30: class keepLast 2 over 4 rounds" s_class_retention
step "issue 30: locked snapshot deletion refused" s_locked_delete
