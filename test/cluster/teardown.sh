#!/usr/bin/env bash
# teardown.sh: remove everything a test-cluster run made, in an order that
# lets each step succeed: the kubelet first (so it stops restarting pods),
# then the pods' processes and containerd's shims, the remaining daemons by
# pid, mounts (deepest first), loop devices, cgroups, the network namespaces
# and finally the files. Safe to run twice, and after a run that was killed.
# Exits non-zero if anything is left behind.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"
source "$HERE/lib/node_b.sh"

# stop_pid NAME: SIGTERM the pid in $RUN/pids/NAME, SIGKILL after 15s.
stop_pid() {
  local f=$RUN/pids/$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# pids_matching CMD: pids whose command line or cgroup shows they belong to
# this cluster: pod processes (cgroup under kubepods) and containerd shims
# (started with this run's containerd socket).
cluster_pids() {
  local p
  for p in /proc/[0-9]*; do
    if grep -q '/kubepods' "$p/cgroup" 2>/dev/null || tr "\\0" " " 2>/dev/null < "$p/cmdline" | grep -qF -e "$CTR_SOCK" -e "$CTR_SOCK_B"; then
      echo "${p#/proc/}"
    fi
  done
}

# our_mounts: mount points under the paths this run owns, deepest first.
our_mounts() {
  awk '{print $5}' /proc/self/mountinfo | grep -E "^($RUN|/var/lib/kubelet|/var/lib/chainvol)(/|$)" | sort -r | uniq
  if [[ -f $RUN/netns-before ]]; then
    ls /run/netns 2>/dev/null | grep '^cni-' | grep -vxFf "$RUN/netns-before" | sed 's#^#/run/netns/#'
  fi
}

teardown() {
  local left=0
  stop_pid kubelet
  stop_pid kubelet-b
  for pid in $(cluster_pids); do kill -9 "$pid" 2>/dev/null; done
  sleep 1
  if [[ -f $RUN/pids/order ]]; then
    for name in $(tac "$RUN/pids/order"); do stop_pid "$name"; done
  fi
  for pid in $(cluster_pids); do kill -9 "$pid" 2>/dev/null; done
  # The second node's (CLUSTER_NODES=2) first: its pool's loop devices
  # are the host's too.
  local left_b; left_b=$(teardown_node_b)
  [[ -n $left_b ]] && { log "teardown: second node left: ${left_b//$'\n'/; }"; left=1; }
  # Up to three passes, for what a lazy unmount or a slow loop release left.
  for _ in 1 2 3; do
    release_storage
    [[ -z $(our_mounts) && -z $(our_loops) ]] && break
    sleep 2
  done
  # The kubelet's cgroups (cgroupfs driver, cgroup v1): leaves first.
  find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null
  for ns in $(our_netns); do ip netns del "$ns" 2>/dev/null; done
  ip netns del "$NETNS" 2>/dev/null
  release_netns_dir

  # What is left, if anything, is reported and fails the run.
  local procs; procs=$(cluster_pids)
  [[ -n $procs ]] && { log "teardown: processes left: $procs"; left=1; }
  local mnts; mnts=$(our_mounts)
  [[ -n $mnts ]] && { log "teardown: mounts left: $mnts"; left=1; }
  local loops; loops=$(our_loops)
  [[ -n $loops ]] && { log "teardown: loop devices left: $(echo $loops)"; left=1; }
  ip netns list 2>/dev/null | grep -qw "$NETNS" && { log "teardown: netns $NETNS left"; left=1; }
  [[ -f $RUN/netns-dir-made && -d /run/netns ]] && { log "teardown: /run/netns left (made by this run)"; left=1; }
  if (( left == 0 )); then
    # Only paths this run marked as its own are removed.
    for p in /var/lib/kubelet /var/lib/chainvol; do
      [[ -e $p/.chainvol-e2e ]] && rm -rf --one-file-system "$p"
    done
    rm -rf --one-file-system "$RUN"
    log "teardown: clean (no processes, mounts, loop devices or namespaces left)"
  fi
  return $left
}

# pool_loop [IMAGE]: the loop device holding a pool's XFS (backed by
# IMAGE, default the first node's $RUN/pool.img).
pool_loop() {
  losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v f="${1:-$RUN/pool.img}" '$2 == f {print $1}'
}

# our_loops [IMAGE]: the pool's loop device (pool_loop IMAGE) and every loop
# device the driver attached to an lvol file on it. Matched by the backing file's device number, not its
# path: once the pool is lazily unmounted the kernel shows paths relative to
# the detached mount ("/lvols/...").
our_loops() {
  local pool; pool=$(pool_loop "${1:-$RUN/pool.img}")
  [[ -n $pool ]] || return 0
  local majmin; majmin=$(lsblk -dn -o MAJ:MIN "$pool" | tr -d ' ')
  losetup -n -O NAME,BACK-MAJ:MIN 2>/dev/null | awk -v d="$majmin" '$2 == d {print $1}'
  echo "$pool"
}

# release_storage: the pods' and the kubelet's mounts first (they sit on the
# driver's loop devices), then those loop devices, then the pool's mounts and
# its own loop device.
release_storage() {
  local m l
  for m in $(our_mounts | grep -v '^/var/lib/chainvol'); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  for l in $(our_loops | grep -vx "$(pool_loop)"); do losetup -d "$l" 2>/dev/null; done
  for m in $(our_mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  for l in $(our_loops); do losetup -d "$l" 2>/dev/null; done
}

# release_netns_dir: when this run's `ip netns add` made /run/netns (and
# bind-mounted it on itself, as iproute2 does), unmount and remove it once
# no namespace is left in it.
release_netns_dir() {
  [[ -f $RUN/netns-dir-made && -d /run/netns ]] || return 0
  [[ -z $(ls -A /run/netns) ]] || return 0
  while mountpoint -q /run/netns; do umount /run/netns 2>/dev/null || break; done
  rmdir /run/netns 2>/dev/null
}

# our_netns: the pods' network namespaces containerd made during this run.
our_netns() {
  [[ -f $RUN/netns-before ]] || return 0
  ls /run/netns 2>/dev/null | grep '^cni-' | grep -vxFf "$RUN/netns-before"
}

teardown
