# scenarios.sh: the end-to-end scenarios, each asserting on cluster objects
# and on the data a pod reads back. A scenario function returns non-zero on
# the first failed assertion, after logging what it expected and what it got.

# The file tree: WRITE1 at the first backup, WRITE2 (a change, a delete and
# an add) at the second. LIST prints every path and each file's md5.
WRITE1='mkdir -p /data/tree/a/b && echo one > /data/tree/a/f1 && echo two > /data/tree/a/b/f2 && head -c 1048576 /dev/urandom > /data/tree/blob && sync'
WRITE2='echo one-v2 > /data/tree/a/f1 && rm /data/tree/a/b/f2 && mkdir /data/tree/c && echo three > /data/tree/c/f3 && sync'
LIST='cd /data/tree && find . | sort | while read -r f; do if [ -f "$f" ]; then md5sum "$f"; else echo "dir $f"; fi; done > /dev/termination-log'

# expect WHAT GOT WANT: equality, logged either way.
expect() {
  if [[ $2 == "$3" ]]; then return 0; fi
  log "$1: got [$2], want [$3]"
  return 1
}

# classes: the StorageClasses and the backup VolumeSnapshotClass under test,
# and the example restore class users copy (deploy/examples).
classes() {
  k apply -f "$REPO/deploy/examples/storageclasses/storageclass-restore.yaml" >/dev/null
  storage_class e2e-ext4 '{csi.storage.k8s.io/fstype: ext4}' expand
  storage_class e2e-xfs '{csi.storage.k8s.io/fstype: xfs}' expand
  # Restore-by-class: each claim starts from the newest backup of the claim
  # with its own namespace and name. No fstype: the backup's is kept.
  storage_class e2e-restore '{fromBackup: "${pvc.namespace}/${pvc.name}@latest"}' expand
  # Names ext4 for an XFS backup: must be refused.
  storage_class e2e-xfs-as-ext4 '{csi.storage.k8s.io/fstype: ext4, fromBackup: "xfsapp/xdata@latest"}'
  backup_class e2e-backup Retain
}

# pv_of NS CLAIM: the claim's bound PV.
pv_of() { jp "$1" "pvc/$2" '{.spec.volumeName}'; }

s_provision() {
  k create namespace app >/dev/null
  pvc app data e2e-ext4 1Gi
  L1=$(run_pod app writer data "$WRITE1 && $LIST") || return 1
  expect "claim phase" "$(jp app pvc/data '{.status.phase}')" Bound || return 1
  local pv; pv=$(pv_of app data)
  expect "PV driver" "$(k get pv "$pv" -o 'jsonpath={.spec.csi.driver}')" chainvol.csi.io || return 1
  expect "PV node affinity" \
    "$(k get pv "$pv" -o 'jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key}={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')" \
    "topology.chainvol.csi.io/node=$NODE_NAME" || return 1
  expect "files written" "$(grep -c . <<<"$L1")" 6 || return 1
  log "  PV $pv on $NODE_NAME; tree: $(tr '\n' ';' <<<"$L1")"
}

s_backups() {
  local m0 m1 m2
  m0=$(last_success app/data) || return 1
  H1=$(snapshot app snap1 data) || return 1
  m1=$(last_success app/data) || return 1
  L2=$(run_pod app changer data "$WRITE2 && $LIST") || return 1
  H2=$(snapshot app snap2 data) || return 1
  m2=$(last_success app/data) || return 1
  # /metrics: the chain's last-success timestamp appears with the first
  # backup and moves forward with the second.
  awk -v a="$m0" -v b="$m1" -v c="$m2" 'BEGIN { exit !(a == 0 && b > 0 && c > b) }' \
    || { log "chainvol_backup_last_success_timestamp_seconds{chain=app/data}: $m0, $m1, $m2; want 0 < rising"; return 1; }
  log "  last-success timestamp: none, then $m1, then $m2"
  [[ $H1 =~ ^backup:([^:]+):app/data@ ]] || { log "handle $H1 is not a backup of app/data"; return 1; }
  local tgt=${BASH_REMATCH[1]}
  [[ $H2 != "$H1" && $H2 == "backup:$tgt:app/data@"* ]] || { log "second handle $H2"; return 1; }
  # The chain on the node's backup target: the second backup is a delta on
  # top of the first, far smaller than the volume.
  local chain; chain=$(CHAINVOL_TARGETS="$tgt=file:///var/lib/chainvol/backups" \
    "$BIN/chainvolctl" backup ls "$tgt:app/data" -o json) || return 1
  local id1=${H1##*@} id2=${H2##*@}
  expect "parent of the first backup (a full one)" "$(jq -r --arg id "$id1" '.[] | select(.id == $id) | .parent' <<<"$chain")" "" || return 1
  expect "parent of the second backup" "$(jq -r --arg id "$id2" '.[] | select(.id == $id) | .parent' <<<"$chain")" "$id1" || return 1
  local changed size
  changed=$(jq -r --arg id "$id2" '.[] | select(.id == $id) | .changedBytes' <<<"$chain")
  size=$(jq -r --arg id "$id2" '.[] | select(.id == $id) | .sizeBytes' <<<"$chain")
  (( changed > 0 && changed * 10 < size )) || { log "second backup changed $changed of $size bytes: not incremental"; return 1; }
  log "  $H1 (full), $H2 (incremental: $changed of $size bytes changed)"
}

s_restore() {
  local old; old=$(pv_of app data)
  k delete namespace app --wait=true --timeout=180s >/dev/null || return 1
  until_true "PV $old deleted" 120 sh -c "! '$KUBECTL' get pv $old" || return 1
  k create namespace app >/dev/null
  # By class: the newest backup of app/data, i.e. the second one.
  pvc app data e2e-restore 1Gi
  local got; got=$(run_pod app reader data "$LIST") || return 1
  expect "files restored by class (second backup)" "$got" "$L2" || return 1
  expect "fsType of the class-restored PV" \
    "$(k get pv "$(pv_of app data)" -o 'jsonpath={.spec.csi.volumeAttributes.fsType}')" ext4 || return 1
  # By handle: a pre-provisioned content for the first backup, as in a new
  # cluster (deploy/examples/restore-snapshot).
  apply <<Y
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata:
  name: e2e-imported-snap1
  labels: {snapshot.storage.kubernetes.io/managed-by: $NODE_NAME}
spec:
  deletionPolicy: Retain
  driver: chainvol.csi.io
  volumeSnapshotClassName: e2e-backup
  source: {snapshotHandle: "$H1"}
  volumeSnapshotRef: {name: snap1-imported, namespace: app}
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap1-imported, namespace: app}
spec:
  volumeSnapshotClassName: e2e-backup
  source: {volumeSnapshotContentName: e2e-imported-snap1}
Y
  until_true "imported snapshot ready" 120 sh -c "[ \"\$('$KUBECTL' -n app get volumesnapshot snap1-imported -o jsonpath='{.status.readyToUse}')\" = true ]" || return 1
  pvc app data-v1 e2e-ext4 1Gi snap1-imported
  got=$(run_pod app reader-v1 data-v1 "$LIST") || return 1
  expect "files restored from the imported handle (first backup)" "$got" "$L1" || return 1
  expect "fsType of the handle-restored PV" \
    "$(k get pv "$(pv_of app data-v1)" -o 'jsonpath={.spec.csi.volumeAttributes.fsType}')" ext4 || return 1
  log "  class restore = second backup's tree, handle restore = first backup's tree, fsType ext4"
}

s_fstype_refused() {
  k create namespace xfsapp >/dev/null
  pvc xfsapp xdata e2e-xfs 1Gi
  run_pod xfsapp xwriter xdata 'echo xfs > /data/hello && sync && echo ok > /dev/termination-log' >/dev/null || return 1
  snapshot xfsapp xsnap xdata >/dev/null || return 1
  pvc xfsapp wrong e2e-xfs-as-ext4 1Gi
  pod xfsapp wrong-reader wrong 'cat /data/hello'
  until_true "refusal event" 120 sh -c "'$KUBECTL' -n xfsapp get events --field-selector involvedObject.name=wrong -o jsonpath='{.items[*].message}' | grep -q 'holds a xfs filesystem'" || return 1
  local ev; ev=$(events xfsapp PersistentVolumeClaim wrong | grep -m1 'holds a xfs filesystem')
  [[ $ev == *"fsType ext4"* ]] || { log "event does not name both filesystems: $ev"; return 1; }
  expect "refused claim phase" "$(jp xfsapp pvc/wrong '{.status.phase}')" Pending || return 1
  k -n xfsapp delete pod wrong-reader --wait=false >/dev/null
  k -n xfsapp delete pvc wrong --wait=false >/dev/null
  log "  event: ${ev:0:300}"
}

s_expand_online() {
  # XFS: ext4's online growth needs CAP_SYS_RESOURCE, which this sandbox lacks.
  pod xfsapp grower xdata 'before=$(df -k /data | awk "NR==2{print \$2}"); until [ $(df -k /data | awk "NR==2{print \$2}") -gt 1572864 ]; do sleep 1; done; echo "$before $(df -k /data | awk "NR==2{print \$2}")" > /dev/termination-log'
  until_true "grower running" 120 sh -c "[ \"\$('$KUBECTL' -n xfsapp get pod grower -o jsonpath='{.status.phase}')\" = Running ]" || return 1
  k -n xfsapp patch pvc xdata -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' >/dev/null
  local t0=$SECONDS rc
  while :; do
    finished xfsapp grower; rc=$?
    (( rc == 0 )) && break
    (( rc == 2 || SECONDS - t0 > 180 )) && { log "pod never saw the new size; claim: $(jp xfsapp pvc/xdata '{.status}')"; return 1; }
    sleep 1
  done
  local sizes; sizes=$(message xfsapp grower)
  until_true "claim capacity 2Gi" 60 sh -c "[ \"\$('$KUBECTL' -n xfsapp get pvc xdata -o jsonpath='{.status.capacity.storage}')\" = 2Gi ]" || return 1
  log "  filesystem size seen by the running pod: ${sizes% *} KiB -> ${sizes#* } KiB; claim capacity 2Gi"
}

# s_long_restore: a restore from the target that outlives the provisioner's
# --timeout (3s here): CreateVolume answers Aborted with progress, the
# provisioner retries and records each answer as an event on the claim, and
# the claim binds.
s_long_restore() {
  k create namespace bigapp >/dev/null
  pvc bigapp big e2e-ext4 "${BIG_GIB}Gi"
  BIG_SUM=$(run_pod bigapp bigwriter big \
    "head -c $((BIG_GIB * 1024 - 200))M /dev/urandom > /data/random && sync && md5sum /data/random | cut -d' ' -f1 > /dev/termination-log" 900) || return 1
  snapshot bigapp bigsnap big >/dev/null || return 1
  # The source claim goes first, as after a loss: while its volume lives,
  # the backup's local snapshot seeds the restore (pkg/driver/restore_base.go)
  # and nothing is fetched, so it would end well within the timeout.
  local pv; pv=$(pv_of bigapp big)
  k -n bigapp delete pvc big --wait=true --timeout=120s >/dev/null || return 1
  until_true "PV $pv deleted" 120 sh -c "! '$KUBECTL' get pv $pv" || return 1
  local t0=$SECONDS
  pvc bigapp big-restored e2e-ext4 "${BIG_GIB}Gi" bigsnap
  local got; got=$(run_pod bigapp bigreader big-restored \
    "md5sum /data/random | cut -d' ' -f1 > /dev/termination-log" 900) || return 1
  local took=$((SECONDS - t0))
  local tmo; tmo=$(k -n chainvol-system get ds chainvol-node -o jsonpath='{.spec.template.spec.containers[?(@.name=="csi-provisioner")].args}' | grep -o 'timeout=[0-9]*s' | head -1)
  expect "restored data checksum" "$got" "$BIG_SUM" || return 1
  local prog; prog=$(events bigapp PersistentVolumeClaim big-restored | grep -E 'Aborted.*restore of .* in progress: ' || true)
  [[ -n $prog ]] || { log "no progress event on the claim: $(events bigapp PersistentVolumeClaim big-restored)"; return 1; }
  # The driver's own Normal events (pkg/driver/events.go), which go on
  # after client-go's spam filter silences the provisioner's Warnings.
  local own; own=$(events bigapp PersistentVolumeClaim big-restored | grep -E '^RestoreProgress: restore of .*' || true)
  [[ -n $own ]] || { log "no RestoreProgress event from chainvol-csi on the claim: $(events bigapp PersistentVolumeClaim big-restored)"; return 1; }
  log "  provisioner $tmo; restore of ${BIG_GIB}GiB took ${took}s to bind and read; $(grep -c . <<<"$prog") progress event(s), last: $(tail -1 <<<"$prog" | grep -o 'restore of .*')"
}

# last_success CHAIN: chainvol_backup_last_success_timestamp_seconds of the
# chain, scraped from the node plugin's /metrics through the apiserver's pod
# proxy; 0 when the chain has none yet.
last_success() {
  local pod; pod=$(k -n chainvol-system get pods -l app.kubernetes.io/component=node -o jsonpath='{.items[0].metadata.name}')
  local out; out=$(k get --raw "/api/v1/namespaces/chainvol-system/pods/$pod:9090/proxy/metrics") || { log "scrape of $pod failed"; return 1; }
  grep -q '^chainvol_build_info{' <<<"$out" || { log "no chainvol_build_info in /metrics of $pod"; return 1; }
  awk -v c="$1" '$1 ~ /^chainvol_backup_last_success_timestamp_seconds\{/ && index($1, "chain=\"" c "\"") { v = $2 } END { print (v == "" ? 0 : v) }' <<<"$out"
}

# s_example_restore_class: the XFS backup of xfsapp/xdata restored through
# the example restore class as users copy it (deploy/examples, no fstype):
# after losing the namespace, a claim of the same name gets the data back,
# on XFS.
s_example_restore_class() {
  k delete namespace xfsapp --wait=true --timeout=180s >/dev/null || return 1
  k create namespace xfsapp >/dev/null
  pvc xfsapp xdata chainvol-restore 2Gi
  local got; got=$(run_pod xfsapp xreader xdata 'cat /data/hello > /dev/termination-log') || return 1
  expect "file restored through chainvol-restore" "$got" xfs || return 1
  expect "restored fsType" "$(k get pv "$(pv_of xfsapp xdata)" -o 'jsonpath={.spec.csi.volumeAttributes.fsType}')" xfs || return 1
  log "  chainvol-restore (deploy/examples) restored the XFS backup of xfsapp/xdata"
}
