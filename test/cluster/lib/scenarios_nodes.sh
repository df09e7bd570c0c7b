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
  # The backups of the claim nodes/src, newest first (a fromBackup class
  # whose claims need not share the source's name).
  storage_class e2e-from-nodes-src '{fromBackup: "nodes/src@latest"}'
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

# spread_sts NS CLASS ROUND: a 2-replica StatefulSet "spread" whose members
# must run on different nodes (required anti-affinity on the hostname; it
# tolerates the second node's taint), each writing ROUND's data as the
# StatefulSet of issue 18 does (STS_SCRIPT; ROUND 0 writes nothing).
spread_sts() {
  apply <<Y
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: spread, namespace: $1}
spec:
  serviceName: spread
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations: [{operator: Exists}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {labelSelector: {matchLabels: {app: spread}}, topologyKey: kubernetes.io/hostname}
      containers:
        - name: c
          image: $TOOLS_IMAGE
          imagePullPolicy: Never
          env: [{name: ROUND, value: "$3"}]
          command: ["/bin/sh", "-ec", $(printf '%s' "$STS_SCRIPT" | jq -Rs .)]
          readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1}
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        storageClassName: $2
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
Y
  k -n "$1" rollout status statefulset/spread --timeout=300s >/dev/null || {
    log "StatefulSet $1/spread not rolled out: $(k -n "$1" get pvc,pods -o wide 2>&1)"; return 1; }
}

# member_nodes NS: "ORDINAL=NODE" of each claim's PV, sorted by ordinal.
member_nodes() { local i; for i in 0 1; do echo "$i=$(pv_node "$1" "data-spread-$i")"; done; }

# s_nodes_statefulset_spread: a StatefulSet with one member on each node
# writes, each claim is backed up on its own node; after the namespace is
# lost, the members come back through the restore-by-class
# (`${pvc.namespace}/${pvc.name}@latest`), wherever the scheduler puts
# them, each with its own data.
s_nodes_statefulset_spread() {
  k create namespace spread >/dev/null
  spread_sts spread e2e-ext4 1 || return 1
  local before; before=$(member_nodes spread)
  [[ $(cut -d= -f2 <<<"$before" | sort -u | wc -l) == 2 ]] || { log "members not on two nodes: $before"; return 1; }
  local i
  for i in 0 1; do snapshot spread "b-$i" "data-spread-$i" >/dev/null || return 1; done
  gone_ns spread || return 1
  k create namespace spread >/dev/null
  spread_sts spread e2e-restore 0 || return 1
  local after; after=$(member_nodes spread)
  k -n spread scale statefulset spread --replicas=0 >/dev/null
  until_true "members of spread stopped" 120 sh -c "[ -z \"\$('$KUBECTL' -n spread get pods -l app=spread -o name)\" ]" || return 1
  local got node
  for i in 0 1; do
    node=$(pv_node spread "data-spread-$i")
    got=$(POD_NODE=$node run_pod spread "read-$i" "data-spread-$i" "$STS_READ") || return 1
    expect "member $i restored on $node" "$got" "$(printf 'spread-%s round 1\nspread-%s round 1\nblob-ok' "$i" "$i")" || return 1
  done
  log "  backed up on $(tr '\n' ' ' <<<"$before"); restored on $(tr '\n' ' ' <<<"$after")"
  gone_ns spread
}

# s_nodes_drain_pool_lost: two claims live on the second node and are
# backed up; the node is drained (cordoned, its pods evicted) and its pool
# loses their lvols (their data files removed under the driver, as a dead
# disk would); the user deletes the lost claims and makes them again
# through the restore-by-class: each comes back on the first node, the only
# one schedulable, with the files of its backup.
s_nodes_drain_pool_lost() {
  k create namespace lost >/dev/null
  local c got want=() i=0
  for c in one two; do
    pvc lost "$c" e2e-ext4 1Gi
    got=$(POD_NODE=$NODE_B_NAME run_pod lost "w-$c" "$c" "$WRITE1 && echo $c > /data/tree/name && sync && $LIST") || return 1
    want+=("$got")
    expect "PV node of $c" "$(pv_node lost "$c")" "$NODE_B_NAME" || return 1
    snapshot lost "b-$c" "$c" >/dev/null || return 1
  done
  local vols; vols=$(for c in one two; do k get pv "$(pv_of lost "$c")" -o jsonpath='{.spec.csi.volumeHandle}'; echo; done)
  k drain "$NODE_B_NAME" --ignore-daemonsets --delete-emptydir-data --force --timeout=120s >/dev/null || return 1
  local v
  for v in $vols; do in_b rm "/var/lib/chainvol/pool/lvols/$v.img" || return 1; done
  k -n lost delete pvc one two --wait=false >/dev/null
  until_true "lost claims deleted" 120 sh -c "[ -z \"\$('$KUBECTL' -n lost get pvc -o name)\" ]" || return 1
  local t0=$SECONDS
  for c in one two; do
    pvc lost "$c" e2e-restore 1Gi
    got=$(run_pod lost "r-$c" "$c" "$LIST") || { k uncordon "$NODE_B_NAME" >/dev/null; return 1; }
    expect "tree of $c back from its backup" "$got" "${want[i]}" || { k uncordon "$NODE_B_NAME" >/dev/null; return 1; }
    expect "PV node of the restored $c" "$(pv_node lost "$c")" "$NODE_NAME" || { k uncordon "$NODE_B_NAME" >/dev/null; return 1; }
    i=$((i + 1))
  done
  log "  $NODE_B_NAME drained, its lvols of lost/one and lost/two removed; both back on $NODE_NAME from their backups in $((SECONDS - t0))s"
  k uncordon "$NODE_B_NAME" >/dev/null
  k delete namespace lost --wait=true --timeout=180s >/dev/null
}
