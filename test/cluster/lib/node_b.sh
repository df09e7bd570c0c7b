# node_b.sh: the second node of CLUSTER_NODES=2, on the same machine as the
# first, joined to its control plane. What a node owns on a real machine it
# owns here too:
# - a network namespace $NETNS_B with $NODE_B_IP, linked to the first
#   node's namespace by a veth pair (the apiserver stays at $NODE_IP:6443),
#   and its pods' bridge (10.251.1.0/24, routed from the first namespace);
# - a mount namespace (persistent, $NODE_B/ns/mnt, a slave of the host's)
#   in which /var/lib/kubelet, /var/lib/chainvol, /var/log/pods and
#   /var/log/containers are its own directories under $NODE_B, its XFS pool
#   is mounted at /var/lib/chainvol/pool, and the first node's backup
#   directory is shared at /var/lib/chainvol/backups (the default file
#   target, as an NFS export would be); so the chart's one DaemonSet, with
#   the same hostPaths, runs a driver of its own pool on each node;
# - its containerd (own root, state, socket and runc root) and kubelet
#   (own cgroup root /$NETNS_B, tainted so that only pods that ask run
#   there: the one-node scenarios keep to the first node).
# Teardown: teardown_node_b (teardown.sh), before the first node's.

NS_PATH_B=/run/netns/$NETNS_B
MNT_B=$NODE_B/ns/mnt
SHARED_BACKUPS=$RUN/backups
TAINT_B=chainvol.csi.io/e2e-node-b

# in_b CMD...: run CMD in the second node's network and mount namespaces.
in_b() { nsenter --net="$NS_PATH_B" --mount="$MNT_B" "$@"; }

# start_b NAME CMD...: start's twin for the second node (nsenter itself in
# the background, so that the pid recorded is the daemon's).
start_b() {
  local name=$1; shift
  nsenter --net="$NS_PATH_B" --mount="$MNT_B" "$@" > "$RUN/logs/$name.log" 2>&1 &
  echo $! > "$RUN/pids/$name"
  echo "$name" >> "$RUN/pids/order"
}

# cgroup_dirs_b: the second kubelet's cgroup root in every cgroup v1
# hierarchy (the first kubelet owns /kubepods).
cgroup_dirs_b() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -L ${h%/} || ! -d $h ]] && continue    # cpu -> cpu,cpuacct and the like
    echo "${h}$NETNS_B"
  done
}

# preflight_node_b: nothing of a second node may be left from a killed run.
preflight_node_b() {
  ip netns list | grep -qw "$NETNS_B" && die "network namespace $NETNS_B exists (run test/cluster/teardown.sh)"
  [[ -e $NODE_B ]] && die "$NODE_B exists (run test/cluster/teardown.sh)"
  [[ -f /sys/fs/cgroup/cgroup.controllers ]] && die "CLUSTER_NODES=2 needs cgroup v1 (the second kubelet's cgroup root is made per hierarchy)"
  local d; for d in $(cgroup_dirs_b); do [[ -e $d ]] && die "$d exists (run test/cluster/teardown.sh)"; done
  mkdir -p "$NODE_B"/{ns,kubelet,chainvol,pods-log,containers-log,containerd,cni,runc}
  mkdir -p /var/log/pods /var/log/containers "$SHARED_BACKUPS"
}

# setup_node_b_net: the namespace, the link to the first node, routes.
setup_node_b_net() {
  ip netns add "$NETNS_B"
  ip -n "$NETNS_B" link set lo up
  ip -n "$NETNS" link add nodeb-a type veth peer name nodeb-b netns "$NETNS_B"
  ip -n "$NETNS_B" addr add "$NODE_B_IP/24" dev nodeb-b
  ip -n "$NETNS_B" link set nodeb-b up
  ip -n "$NETNS_B" route add default dev nodeb-b
  ip -n "$NETNS" link set nodeb-a up
  ip -n "$NETNS" route add "$NODE_B_IP/32" dev nodeb-a
  ip -n "$NETNS" route add 10.251.1.0/24 via "$NODE_B_IP" dev nodeb-a
  # The second node's pods reach the apiserver through its namespace.
  nsenter --net="$NS_PATH_B" sysctl -qw net.ipv4.ip_forward=1
}

# setup_node_b_mounts: the mount namespace and the node's own paths in it.
# The first node's backups move to $SHARED_BACKUPS, bound at the same path
# on both nodes.
setup_node_b_mounts() {
  mount --bind "$NODE_B/ns" "$NODE_B/ns"
  mount --make-private "$NODE_B/ns"
  : > "$MNT_B"
  unshare --mount="$MNT_B" --propagation slave true
  mkdir -p /var/lib/chainvol/backups
  mount --bind "$SHARED_BACKUPS" /var/lib/chainvol/backups
  truncate -s 20G "$NODE_B/pool.img"
  mkfs.xfs -q -m reflink=1 "$NODE_B/pool.img"
  # The first node's /var/lib/kubelet and /var/lib/chainvol came into the
  # namespace as slave copies; they go first: a bind mount over one would
  # stack on it, and containerd, which reads the first entry of
  # mountinfo for a path, would see the copy (not shared) and refuse the
  # driver's Bidirectional mounts ("is not a shared mount").
  in_b sh -euc '
    for p in kubelet:/var/lib/kubelet chainvol:/var/lib/chainvol; do
      if mountpoint -q "${p#*:}"; then umount -R "${p#*:}"; fi
      mount --bind "$1/${p%%:*}" "${p#*:}"
      mount --make-rshared "${p#*:}"
    done
    mount --bind "$1/pods-log" /var/log/pods
    mount --bind "$1/containers-log" /var/log/containers
    mkdir -p /var/lib/chainvol/pool /var/lib/chainvol/backups
    mount -o loop "$1/pool.img" /var/lib/chainvol/pool
    mount --bind "$2" /var/lib/chainvol/backups
  ' sh "$NODE_B" "$SHARED_BACKUPS"
}

# start_node_b: containerd (with every image the first node imported),
# then the kubelet, tainted, Ready.
start_node_b() {
  local d
  for d in $(cgroup_dirs_b); do
    mkdir -p "$d"
    # A new cpuset is empty: its tasks could run nowhere.
    [[ -f $d/cpuset.cpus ]] && cat "${d%/*}/cpuset.cpus" > "$d/cpuset.cpus" && cat "${d%/*}/cpuset.mems" > "$d/cpuset.mems"
  done
  containerd_config "$NODE_B/containerd" "$CTR_SOCK_B" "$NODE_B/cni" e2e-b 10.251.1.0/24 "$NODE_B/runc"
  start_b containerd-b containerd --config "$NODE_B/containerd/config.toml"
  wait_for containerd-b 60 ctr --address "$CTR_SOCK_B" version
  import_images_b 0
  kubelet_config "$NODE_B/kubelet.yaml" "$CTR_SOCK_B" kubelet-b "cgroupRoot: /$NETNS_B
registerWithTaints: [{key: $TAINT_B, value: only, effect: NoSchedule}]"
  start_b kubelet-b "$BIN/kubelet" --config="$NODE_B/kubelet.yaml" --kubeconfig="$RUN/pki/node-b.kubeconfig" \
    --hostname-override="$NODE_B_NAME" --node-ip="$NODE_B_IP" --root-dir=/var/lib/kubelet -v=2
  wait_for "node $NODE_B_NAME" 120 "$KUBECTL" wait --for=condition=Ready "node/$NODE_B_NAME" --timeout=1s
}

# import_images_b SKIP: import into the second node's containerd the images
# the first node imported (lib/images.sh lists them in $RUN/images.list),
# but for the first SKIP of them (already there).
import_images_b() {
  local tar n=0
  while read -r tar; do
    ctr --address "$CTR_SOCK_B" -n k8s.io images import "$tar" >/dev/null || die "ctr import $tar on $NODE_B_NAME failed"
    n=$((n + 1))
  done < <(tail -n +$(($1 + 1)) "$RUN/images.list")
  log "images imported on $NODE_B_NAME: $n"
}

# untaint_node_b: the second node takes any pod (Kubernetes' storage suite
# places its pods itself and tolerates no taint).
untaint_node_b() { "$KUBECTL" taint node "$NODE_B_NAME" "$TAINT_B-" >/dev/null; }

# up_node_b: the whole second node (up.sh, after the first node's kubelet).
up_node_b() {
  setup_node_b_net
  setup_node_b_mounts
  start_node_b
}

# mounts_b: the mount points of the second node's own paths in its mount
# namespace, deepest first.
mounts_b() {
  nsenter --mount="$MNT_B" awk '{print $5}' /proc/self/mountinfo \
    | grep -E '^(/var/lib/kubelet|/var/lib/chainvol|/var/log/pods|/var/log/containers)(/|$)' | sort -r | uniq
}

# release_node_b: the second node's storage, as release_storage does the
# first's: the kubelet's and pods' mounts (on the driver's loop devices),
# those loop devices, the pool and the namespace's other mounts; then the
# namespace itself (its file), which takes whatever mount is left with it.
release_node_b() {
  local m l
  if mountpoint -q "$MNT_B" 2>/dev/null; then
    for m in $(mounts_b | grep -v '^/var/lib/chainvol'); do
      nsenter --mount="$MNT_B" umount "$m" 2>/dev/null || nsenter --mount="$MNT_B" umount -l "$m" 2>/dev/null
    done
    for l in $(our_loops "$NODE_B/pool.img" | grep -vx "$(pool_loop "$NODE_B/pool.img")"); do losetup -d "$l" 2>/dev/null; done
    for m in $(mounts_b); do
      nsenter --mount="$MNT_B" umount "$m" 2>/dev/null || nsenter --mount="$MNT_B" umount -l "$m" 2>/dev/null
    done
    umount "$MNT_B" 2>/dev/null
  fi
  mountpoint -q "$NODE_B/ns" 2>/dev/null && umount "$NODE_B/ns" 2>/dev/null
  for l in $(our_loops "$NODE_B/pool.img"); do losetup -d "$l" 2>/dev/null; done
  return 0
}

# teardown_node_b: after every process is gone (teardown.sh), the second
# node's storage, cgroups (leaves first) and network namespace; prints what
# is left, if anything.
teardown_node_b() {
  [[ -e $NODE_B ]] || return 0
  local d
  for _ in 1 2 3; do
    release_node_b
    ! mountpoint -q "$MNT_B" 2>/dev/null && [[ -z $(our_loops "$NODE_B/pool.img") ]] && break
    sleep 2
  done
  for d in $(cgroup_dirs_b); do [[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
  ip netns del "$NETNS_B" 2>/dev/null
  mountpoint -q "$MNT_B" 2>/dev/null && echo "mount namespace $MNT_B"
  [[ -n $(our_loops "$NODE_B/pool.img") ]] && echo "loop devices $(our_loops "$NODE_B/pool.img" | tr '\n' ' ')"
  for d in $(cgroup_dirs_b); do [[ -d $d ]] && echo "cgroup $d"; done
  ip netns list 2>/dev/null | grep -qw "$NETNS_B" && echo "netns $NETNS_B"
  return 0
}
