#!/usr/bin/env bash
# up.sh: bring the test cluster up from the binaries build.sh made: host
# setup, PKI, control plane, containerd, images, kubelet, snapshot CRDs and
# controller, chainvol through charts/chainvol, and the scenarios' classes
# (with CLUSTER_NODES=2 a second node too: lib/node_b.sh). A process
# of its own so that `set -e` holds (e2e.sh calls it inside a condition,
# where bash ignores -e). By hand: `up.sh`, then `teardown.sh`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"
source "$HERE/lib/pki.sh"
source "$HERE/lib/images.sh"
source "$HERE/lib/cluster.sh"
source "$HERE/lib/node_b.sh"
source "$HERE/lib/kube.sh"
source "$HERE/lib/scenarios.sh"

[[ $(id -u) == 0 ]] || die "needs root (loop devices, mounts, network namespaces)"
preflight
if two_nodes; then preflight_node_b; fi
setup_host
make_pki
start_control_plane
start_containerd
build_images
start_kubelet
if two_nodes; then up_node_b; fi
install_snapshots
install_driver
classes
