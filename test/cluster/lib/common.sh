# common.sh: paths, names and helpers shared by the test-cluster scripts.
# Everything the cluster builds or runs lives outside the repository, under
# $CACHE (kept between runs: binaries, rootfs, images, the last run's logs)
# and $RUN (this run's state, removed at teardown).
CACHE=${CHAINVOL_CLUSTER_CACHE:-/var/cache/chainvol-cluster}
BIN=$CACHE/bin
RUN=${CHAINVOL_CLUSTER_RUN:-/var/lib/chainvol-cluster}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)

# The node: its name, and its address inside the cluster's network namespace.
NETNS=chainvol-e2e
NODE_NAME=e2e-node
NODE_IP=10.250.0.1

CTR_SOCK=$RUN/containerd/containerd.sock

# CLUSTER_NODES=2 (opt-in; lib/node_b.sh) adds a second node on the same
# machine: its own network namespace and address, mount namespace (its own
# kubelet root, chainvol state dir and XFS pool at the usual paths, so the
# chart's one DaemonSet runs unchanged on both), containerd and kubelet,
# joined to the one control plane. Everything of it lives under $NODE_B.
CLUSTER_NODES=${CLUSTER_NODES:-1}
[[ $CLUSTER_NODES == 1 || $CLUSTER_NODES == 2 ]] || { echo "CLUSTER_NODES must be 1 or 2, not $CLUSTER_NODES" >&2; exit 1; }
NODE_B_NAME=e2e-node-b
NODE_B_IP=10.250.0.2
NETNS_B=chainvol-e2e-b
NODE_B=$RUN/node-b
CTR_SOCK_B=$NODE_B/containerd/containerd.sock
two_nodes() { [[ $CLUSTER_NODES == 2 ]]; }
# CHART_VALUES: hack/helmtemplate's values files for this cluster, from the
# repository's root (a scenario's own file goes after them).
CHART_VALUES=(-f test/cluster/values.yaml)
if two_nodes; then CHART_VALUES+=(-f test/cluster/values-two-nodes.yaml); fi
# Images made locally (lib/images.sh); never pulled.
PAUSE_IMAGE=registry.local/chainvol/pause:e2e
TOOLS_IMAGE=registry.local/chainvol/tools:e2e
# The snapshot CRDs ship in external-snapshotter's client module.
SNAPSHOT_CLIENT_MOD=github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0

KUBECONFIG=$RUN/pki/admin.kubeconfig
export KUBECONFIG
# kubectl, always run inside the cluster's network namespace: the apiserver's
# address exists only there.
KUBECTL=$RUN/kubectl

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# stamped NAME CMD...: run CMD unless $BIN/.NAME exists, then create it
# (build.sh, storage/build.sh: a warm run builds nothing).
stamped() {
  local name=$1; shift
  if [[ -f $BIN/.$name ]]; then log "reuse $name"; return; fi
  local t0=$SECONDS
  log "build $name"
  "$@"
  touch "$BIN/.$name"
  log "built $name in $((SECONDS - t0))s"
}
