# cluster.sh: bring up a one-node cluster from the binaries in $BIN. Every
# process runs in the network namespace $NETNS (its own loopback, a dummy
# interface with $NODE_IP, the pods' bridge), entered with `nsenter --net`
# rather than `ip netns exec`, which remounts /sys and hides the cgroup
# mounts from the kubelet. Pids go to $RUN/pids for teardown.

NS_PATH=/run/netns/$NETNS

# start NAME CMD...: run CMD in the cluster's netns, logging to $RUN/logs.
start() {
  local name=$1; shift
  nsenter --net="$NS_PATH" "$@" > "$RUN/logs/$name.log" 2>&1 &
  echo $! > "$RUN/pids/$name"
  echo "$name" >> "$RUN/pids/order"
}

# wait_for WHAT SECONDS CMD...: retry CMD once a second until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    (( SECONDS - t0 < secs )) || die "timed out after ${secs}s waiting for $what"
    sleep 1
  done
  log "$what ready after $((SECONDS - t0))s"
}

# preflight: the host paths the cluster takes over must be free.
preflight() {
  for p in /var/lib/kubelet /var/lib/chainvol; do
    [[ -e $p ]] && die "$p exists: a kubelet or chainvol already uses this machine (or a run was killed; run test/cluster/teardown.sh)"
  done
  ip netns list | grep -qw "$NETNS" && die "network namespace $NETNS exists (run test/cluster/teardown.sh)"
  mkdir -p "$RUN"/{logs,pids,cni}
  printf '#!/bin/sh\nexec nsenter --net=%s %s "$@"\n' "$NS_PATH" "$BIN/kubectl" > "$KUBECTL"
  chmod +x "$KUBECTL"
  # Network namespaces that exist now are not ours to remove at teardown.
  ls /run/netns > "$RUN/netns-before" 2>/dev/null || true
  # `ip netns add` makes /run/netns, bind-mounted on itself, when missing:
  # then teardown removes both.
  [[ -d /run/netns ]] || : > "$RUN/netns-dir-made"
  # Mark the host paths as this run's, so teardown knows it may remove them.
  mkdir -p /var/lib/kubelet /var/lib/chainvol
  touch /var/lib/kubelet/.chainvol-e2e /var/lib/chainvol/.chainvol-e2e
}

# setup_host: the netns, shared mounts for mount propagation, the pool.
setup_host() {
  ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  # No dummy driver in this kernel: a veth pair, both ends inside the
  # netns, gives the node an address on an interface with carrier.
  ip -n "$NETNS" link add node0 type veth peer name node0-peer
  ip -n "$NETNS" addr add "$NODE_IP/24" dev node0
  ip -n "$NETNS" link set node0-peer up
  ip -n "$NETNS" link set node0 up
  # Components pick their address from the default route's interface.
  ip -n "$NETNS" route add default dev node0
  # Bidirectional and HostToContainer propagation need shared source mounts.
  for p in /var/lib/kubelet /var/lib/chainvol; do
    mount --bind "$p" "$p"
    mount --make-rshared "$p"
  done
  # The driver's pool: XFS with reflink on a loop device, as docs/deploy.md asks.
  truncate -s 20G "$RUN/pool.img"
  mkfs.xfs -q -m reflink=1 "$RUN/pool.img"
  mkdir -p /var/lib/chainvol/pool
  mount -o loop "$RUN/pool.img" /var/lib/chainvol/pool
}

start_control_plane() {
  local P=$RUN/pki
  start etcd etcd --name e2e --data-dir "$RUN/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster e2e=http://127.0.0.1:2380
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
    --service-cluster-ip-range=10.96.0.0/24 --allow-privileged=true --kubelet-preferred-address-types=InternalIP \
    --authorization-mode=Node,RBAC --client-ca-file="$P/ca.crt" \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
    --kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$P/sa.pub" \
    --service-account-signing-key-file="$P/sa.key" --cert-dir="$RUN/apiserver-certs"
  wait_for kube-apiserver 120 "$KUBECTL" get --raw /readyz
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
    --leader-elect=false --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --use-service-account-credentials=true
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG" --leader-elect=false
}

# containerd_config DIR SOCK CNI_DIR NET SUBNET [RUNC_ROOT]: a containerd
# configuration in DIR/config.toml serving SOCK, and its CNI network NET
# (a bridge with SUBNET) in CNI_DIR; RUNC_ROOT moves runc's state from
# /run/containerd/runc (a second containerd on the machine).
containerd_config() {
  local d=$1 sock=$2 cni=$3 net=$4 subnet=$5 runc=${6:-}
  mkdir -p "$d" "$cni"
  cat > "$d/config.toml" <<TOML
version = 2
root = "$d/root"
state = "$d/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # No CAP_SYS_RESOURCE here: lowering oom_score_adj fails without this.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni"
TOML
  [[ -n $runc ]] && cat >> "$d/config.toml" <<TOML
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  Root = "$runc"
TOML
  # Pods get addresses on a bridge inside the node's netns; nothing is
  # routed outside the cluster's namespaces.
  cat > "$cni/10-$net.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "$net", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
JSON
}

start_containerd() {
  containerd_config "$RUN/containerd" "$CTR_SOCK" "$RUN/cni" e2e 10.251.0.0/24
  start containerd containerd --config "$RUN/containerd/config.toml"
  wait_for containerd 60 ctr --address "$CTR_SOCK" version
}

# kubelet_config FILE SOCK CERT [EXTRA]: a kubelet configuration using the
# containerd at SOCK and serving with $RUN/pki/CERT.crt; EXTRA is more YAML.
kubelet_config() {
  local P=$RUN/pki
  cat > "$1" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# These machines run cgroup v1, which 1.37 only accepts when told to.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$2
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$P/$3.crt"
tlsPrivateKeyFile: "$P/$3.key"
failSwapOn: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
# A shared build machine: do not evict test pods over disk or image GC.
evictionHard: {nodefs.available: "1%", imagefs.available: "1%", memory.available: "100Mi"}
imageGCHighThresholdPercent: 100
syncFrequency: 10s
YAML
  if [[ -n ${4:-} ]]; then printf '%s\n' "$4" >> "$1"; fi
}

start_kubelet() {
  kubelet_config "$RUN/kubelet.yaml" "$CTR_SOCK" kubelet
  start kubelet "$BIN/kubelet" --config="$RUN/kubelet.yaml" --kubeconfig="$RUN/pki/node.kubeconfig" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --root-dir=/var/lib/kubelet -v=2
  wait_for "node $NODE_NAME" 120 "$KUBECTL" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
}

# install_snapshots: the snapshot CRDs and the snapshot-controller with
# distributed snapshotting (docs/deploy.md), the controller as a host process.
install_snapshots() {
  # The CRDs ship in the client module (a nested module of the release).
  local dir; dir=$(go mod download -json "$SNAPSHOT_CLIENT_MOD" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  "$KUBECTL" apply -k "$dir/config/crd/" >/dev/null
  "$KUBECTL" wait --for=condition=Established --timeout=60s crd/volumesnapshots.snapshot.storage.k8s.io \
    crd/volumesnapshotcontents.snapshot.storage.k8s.io crd/volumesnapshotclasses.snapshot.storage.k8s.io >/dev/null
  start snapshot-controller "$BIN/snapshot-controller" --kubeconfig="$KUBECONFIG" \
    --leader-election=false --enable-distributed-snapshotting -v=2
}

# install_driver: the chart as make image's instructions install it
# (namespace created and labelled for privileged pods, then
# bin/image/chart/chainvol, whose appVersion make image set to the version it
# built, so no image value is given; rendered by hack/helmtemplate, Helm's Go
# library, since no helm CLI is built here) with test/cluster/values.yaml;
# then wait until the kubelet lists the driver on its CSINode (the built-in
# registration worked).
install_driver() {
  "$KUBECTL" create namespace chainvol-system >/dev/null
  "$KUBECTL" label namespace chainvol-system pod-security.kubernetes.io/enforce=privileged >/dev/null
  (cd "$REPO" && go run ./hack/helmtemplate -n chainvol-system "${CHART_VALUES[@]}" \
    bin/image/chart/chainvol) > "$RUN/chainvol.yaml"
  grep -qF "image: $(cat "$RUN/chainvol-image")" "$RUN/chainvol.yaml" || die "bin/image/chart/chainvol does not run $(cat "$RUN/chainvol-image")"
  apply_driver "$RUN/chainvol.yaml" "chainvol DaemonSet"
}

# apply_driver FILE WHAT: apply the rendered chart FILE, then wait (fatal)
# for the DaemonSet's rollout (logged as WHAT) and for the kubelet of every
# node to list the driver on its CSINode.
apply_driver() {
  "$KUBECTL" apply -f "$1" >/dev/null
  wait_for "$2" 180 "$KUBECTL" -n chainvol-system rollout status ds/chainvol-node --timeout=1s
  local n nodes=("$NODE_NAME")
  two_nodes && nodes+=("$NODE_B_NAME")
  for n in "${nodes[@]}"; do
    wait_for "CSINode registration ($n)" 60 sh -c \
      "'$KUBECTL' get csinode '$n' -o jsonpath='{.spec.drivers[*].name}' | grep -qw chainvol.csi.io"
  done
}
