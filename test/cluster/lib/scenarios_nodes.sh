# scenarios_nodes.sh: the scenarios of issue 31 on two nodes
# (CLUSTER_NODES=2, lib/node_b.sh): a backup made on the first node
# restores on the second, through a fromBackup class and through a
# VolumeSnapshot; a clone asked for on the second node is refused with
# ResourceExhausted (the driver there has not the source: it is the first
# node's), external-provisioner gives the claim back to the scheduler, and
# once the claim's pod may run on the first node the clone is made there.

# pv_node NS CLAIM: the node of the claim's PV (its node affinity).
pv_node() {
  k get pv "$(pv_of "$1" "$2")" \
    -o 'jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}'
}

s_nodes_restore_elsewhere() {
  k create namespace nodes >/dev/null
  apply <<'Y'
# The backups of the claim nodes/src, newest first (a fromBackup class whose
# claims need not share the source's name).
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: e2e-from-nodes-src}
provisioner: chainvol.csi.io
volumeBindingMode: WaitForFirstConsumer
parameters: {fromBackup: "nodes/src@latest"}
Y
  pvc nodes src e2e-ext4 1Gi
  local want; want=$(POD_NODE=$NODE_NAME run_pod nodes writer src "$WRITE1 && $LIST") || return 1
  expect "source PV's node" "$(pv_node nodes src)" "$NODE_NAME" || return 1
  local h; h=$(snapshot nodes backup-a src) || return 1
  log "  backup of nodes/src on $NODE_NAME: $h"
  pvc nodes on-b-snap e2e-ext4 1Gi backup-a
  pvc nodes on-b-class e2e-from-nodes-src 1Gi
  local c got
  for c in on-b-snap on-b-class; do
    got=$(POD_NODE=$NODE_B_NAME run_pod nodes "read-$c" "$c" "$LIST") || return 1
    expect "tree of $c on $NODE_B_NAME" "$got" "$want" || return 1
    expect "PV node of $c" "$(pv_node nodes "$c")" "$NODE_B_NAME" || return 1
  done
  log "  restored on $NODE_B_NAME through the VolumeSnapshot and the fromBackup class: $(grep -c . <<<"$want") entries each"
}

s_nodes_clone_refused() {
  apply <<'Y'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: clone, namespace: nodes}
spec:
  storageClassName: e2e-ext4
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  dataSource: {kind: PersistentVolumeClaim, name: src}
Y
  POD_NODE=$NODE_B_NAME pod nodes clone-on-b clone "$LIST"
  until_true "clone refused on $NODE_B_NAME with ResourceExhausted" 120 \
    sh -c "'$KUBECTL' -n nodes get events --field-selector involvedObject.kind=PersistentVolumeClaim,involvedObject.name=clone \
      -o jsonpath='{.items[*].message}' | grep -q 'ResourceExhausted.*not in the pool of node \"$NODE_B_NAME\"'" || {
    events nodes PersistentVolumeClaim clone | tail -5 >&2; return 1; }
  log "  $(events nodes PersistentVolumeClaim clone | grep -m1 ResourceExhausted | cut -c1-300)"
  expect "clone claim while its pod is pinned to $NODE_B_NAME" "$(jp nodes pvc/clone '{.status.phase}')" Pending || return 1
  k -n nodes delete pod clone-on-b --wait=true >/dev/null || return 1
  local t0=$SECONDS got want
  want=$(POD_NODE=$NODE_NAME run_pod nodes read-src src "$LIST") || return 1
  got=$(POD_NODE=$NODE_NAME run_pod nodes clone-on-a clone "$LIST") || return 1
  expect "clone's tree" "$got" "$want" || return 1
  expect "clone's PV node" "$(pv_node nodes clone)" "$NODE_NAME" || return 1
  log "  cloned on $NODE_NAME $((SECONDS - t0))s after its pod moved there"
  k delete namespace nodes --wait=true --timeout=180s >/dev/null
}
