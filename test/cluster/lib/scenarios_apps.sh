# scenarios_apps.sh: the scenarios of issues 14 and 18, about backups as
# Kubernetes objects: imported into a cluster that lost every snapshot
# object, a StatefulSet brought back from one moment with `@before:`, and
# retention through a Delete-class import freeing the bucket's bytes.
# Helpers come from kube.sh and scenarios.sh (expect, snapshot, run_pod).

# ctl ARGS...: the chainvolctl of this run on the host, in the cluster's
# netns (the apiserver's address exists only there), KUBECONFIG the admin's.
# Its default target is the driver's embedded one: the host's
# /var/lib/chainvol/backups is the node plugin's state directory.
ctl() { nsenter --net="/run/netns/$NETNS" "$BIN/chainvolctl" "$@"; }

# content_of NS SNAPSHOT: the VolumeSnapshotContent bound to a snapshot.
content_of() { jp "$1" "volumesnapshot/$2" '{.status.boundVolumeSnapshotContentName}'; }

# ready NS SNAPSHOT...: wait until every snapshot is readyToUse.
ready() {
  local ns=$1 s; shift
  for s in "$@"; do
    until_true "snapshot $ns/$s ready" 120 sh -c "[ \"\$('$KUBECTL' -n $ns get volumesnapshot $s -o jsonpath='{.status.readyToUse}')\" = true ]" || {
      log "snapshot $ns/$s: $(jp "$ns" "volumesnapshot/$s" '{.status}')"; return 1; }
  done
}

# gone_ns NS: delete a namespace and wait until the PVs of its claims are
# gone too (DeleteVolume ran: no local snapshot of the volumes is left).
gone_ns() {
  local pvs; pvs=$(k -n "$1" get pvc -o jsonpath='{.items[*].spec.volumeName}')
  k delete namespace "$1" --wait=true --timeout=180s >/dev/null || return 1
  local pv
  for pv in $pvs; do until_true "PV $pv deleted" 120 sh -c "! '$KUBECTL' get pv $pv" || return 1; done
}

# vs_name CLAIM HANDLE: the VolumeSnapshot `k8s import` makes for a backup
# of NS/CLAIM with a default id: CLAIM-ID in lower case (docs/applications.md).
vs_name() { echo "$1-${2##*@}" | tr 'A-Z' 'a-z'; }

# s_import_after_loss (issue 14): two backups of imp/data; the namespace
# and every snapshot object of them (VolumeSnapshots, and the Retain
# contents, cluster-scoped, deleted by hand) are lost, and so is the volume
# with its local snapshots. `chainvolctl k8s import` makes pre-provisioned
# contents holding only the snapshot handle; the csi-snapshotter checks each
# through ListSnapshots, served from the backup target alone; they become
# ready and the first one restores into a new claim with its own files.
s_import_after_loss() {
  k create namespace imp >/dev/null
  pvc imp data e2e-ext4 1Gi
  local l1 l2 h1 h2 c1 c2
  l1=$(run_pod imp w1 data "$WRITE1 && $LIST") || return 1
  h1=$(snapshot imp s1 data) || return 1
  l2=$(run_pod imp w2 data "$WRITE2 && $LIST") || return 1
  h2=$(snapshot imp s2 data) || return 1
  c1=$(content_of imp s1) c2=$(content_of imp s2)
  gone_ns imp || return 1
  k delete volumesnapshotcontent "$c1" "$c2" --wait=true --timeout=60s >/dev/null || return 1
  local left; left=$(k get volumesnapshotcontent -o json | jq -r '[.items[] | select((.spec.source.snapshotHandle // .status.snapshotHandle // "") | test(":imp/data@"))] | length')
  expect "snapshot contents of imp/data left in the cluster" "$left" 0 || return 1
  k create namespace imp >/dev/null
  ctl k8s import --chain imp/data --class e2e-backup --managed-by "$NODE_NAME" --apply >/dev/null || return 1
  local s1 s2; s1=$(vs_name data "$h1") s2=$(vs_name data "$h2")
  ready imp "$s1" "$s2" || return 1
  local c; c=$(content_of imp "$s1")
  expect "imported content's source" "$(k get volumesnapshotcontent "$c" -o jsonpath='{.spec.source}')" "{\"snapshotHandle\":\"$h1\"}" || return 1
  expect "imported content's managed-by label" \
    "$(k get volumesnapshotcontent "$c" -o jsonpath='{.metadata.labels.snapshot\.storage\.kubernetes\.io/managed-by}')" "$NODE_NAME" || return 1
  pvc imp first e2e-ext4 1Gi "$s1"
  local got; got=$(run_pod imp r1 first "$LIST") || return 1
  expect "files restored from the imported first backup" "$got" "$l1" || return 1
  [[ $l1 != "$l2" ]] || { log "the two backups hold the same tree"; return 1; }
  log "  imported $s1 and $s2 (only the handle, managed-by $NODE_NAME): ready; $s1 restored the first backup's tree"
}

# The StatefulSet of issue 18: ROUND 1, 2, ... makes each pod write its own
# data (who it is, that round, a fresh random blob and its checksum); ROUND
# 0 writes nothing (a restored set). Ready once written. The blob is
# overwritten in place (conv=notrunc): a backup holds the whole block
# device, so data rewritten into newly allocated blocks would leave the old
# blob in free space, still in the next backup, and deleting the older
# backup would free nothing.
STS_SCRIPT='if [ "$ROUND" != 0 ]; then
  echo "$HOSTNAME round $ROUND" > /data/who
  echo "$HOSTNAME round $ROUND" >> /data/history
  dd if=/dev/urandom of=/data/blob bs=1048576 count=8 iflag=fullblock conv=notrunc,fsync 2>/dev/null
  md5sum /data/blob > /data/blob.md5
  sync
fi
touch /tmp/ready
exec sleep 1000000'
# What a reader prints of one member; the blob's checksum is the one
# written with it.
STS_READ='{ cat /data/who /data/history; cd /data && md5sum -c blob.md5 >/dev/null && echo blob-ok; } > /dev/termination-log'
STS_BLOB=8388608

# sts NS CLASS ROUND: the 3-replica StatefulSet web with claims data-web-N.
sts() {
  statefulset "$1" web "$2" "$(printf '%s' "$STS_SCRIPT" | jq -Rs .)" "[{name: ROUND, value: \"$3\"}]"
}

# round ROUND: every member writes ROUND's data, then a backup of each.
# Prints the three handles, one a line (R1 and R2 keep them).
round() {
  sts sts e2e-ext4 "$1" || return 1
  local i
  for i in 0 1 2; do snapshot sts "r$1-web-$i" "data-web-$i" || return 1; echo; done
}

# sts_back_at NS CLASS SELECTOR: NS/web made again through the class CLASS
# (fromBackup `${pvc.namespace}/${pvc.name}@SELECTOR`) in a new namespace
# NS; once its members are stopped, each claim must hold its member's
# round-1 data.
sts_back_at() {
  storage_class "$2" "{fromBackup: \"\${pvc.namespace}/\${pvc.name}@$3\"}"
  k create namespace "$1" >/dev/null
  sts "$1" "$2" 0 || return 1
  k -n "$1" scale statefulset web --replicas=0 >/dev/null
  until_true "members of $1/web stopped" 120 sh -c "[ -z \"\$('$KUBECTL' -n $1 get pods -l app=web -o name)\" ]" || return 1
  local i got
  for i in 0 1 2; do
    got=$(run_pod "$1" "read-$i" "data-web-$i" "$STS_READ") || return 1
    expect "member $i restored @$3" "$got" "$(printf 'web-%s round 1\nweb-%s round 1\nblob-ok' "$i" "$i")" || return 1
  done
}

# s_statefulset_before (issue 18): two backup rounds of a 3-member
# StatefulSet; after the namespace is lost, one class with
# `@before:T` (T between the rounds) gives each member its own first-round
# data. No VolumeGroupSnapshot round: the chart's csi-snapshotter runs with
# CSIVolumeGroupSnapshot=false (values.yaml keeps the chart's default;
# docs/applications.md "Through Kubernetes"); s_statefulset_group
# (scenarios_group.sh) restores a StatefulSet from one group backup taken
# through the driver's GroupController.
s_statefulset_before() {
  k create namespace sts >/dev/null
  R1=$(round 1) || return 1
  sleep 1.2; T_BETWEEN=$(date -u +%FT%TZ); sleep 1.2
  R2=$(round 2) || return 1
  local i h1 h2
  for i in 0 1 2; do
    h1=$(sed -n "$((i + 1))p" <<<"$R1") h2=$(sed -n "$((i + 1))p" <<<"$R2")
    [[ $h1 == *":sts/data-web-$i@"* && $h2 == *":sts/data-web-$i@"* && $h1 != "$h2" ]] || {
      log "member $i: handles $h1 and $h2"; return 1; }
  done
  local gate; gate=$(k -n chainvol-system get ds chainvol-node -o jsonpath='{.spec.template.spec.containers[?(@.name=="csi-snapshotter")].args}' | grep -o 'CSIVolumeGroupSnapshot=[a-z]*')
  expect "csi-snapshotter group snapshot gate (group round skipped)" "$gate" CSIVolumeGroupSnapshot=false || return 1
  STS_CONTENTS=$(for i in 0 1 2; do content_of sts "r1-web-$i"; echo; content_of sts "r2-web-$i"; echo; done)
  gone_ns sts || return 1
  sts_back_at sts e2e-before "before:$T_BETWEEN" || return 1
  log "  rounds 1 and 2 of web-0..2 backed up; @before:$T_BETWEEN restored each member's round-1 data (group round skipped: sidecar gate off)"
}

# bucket_bytes: the bytes stored in the node's embedded backup target.
bucket_bytes() { du -sb /var/lib/chainvol/backups | cut -f1; }

# metric NAME: the sum of a metric's samples on the node plugin's /metrics.
metric() {
  local pod; pod=$(k -n chainvol-system get pods -l app.kubernetes.io/component=node -o jsonpath='{.items[0].metadata.name}')
  k get --raw "/api/v1/namespaces/chainvol-system/pods/$pod:9090/proxy/metrics" |
    awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%.0f\n", s }'
}

# s_retention (issue 18): after the StatefulSet's snapshot objects are
# deleted too, its first-round backups are imported with deletionPolicy
# Delete (class chainvol-backup-delete of deploy/examples/retention); one
# restores; deleting them deletes the backups, and the background gc
# (-gc-delay 2s, -gc-min-age 10s in values.yaml) frees their blobs' blocks:
# the bucket shrinks by about three blobs, the second round stays.
s_retention() {
  k apply -k "$REPO/deploy/examples/retention" >/dev/null || return 1
  k delete volumesnapshotcontent $STS_CONTENTS --wait=true --timeout=60s >/dev/null || return 1
  ctl k8s import --chain sts/data-web-0 --chain sts/data-web-1 --chain sts/data-web-2 --before "$T_BETWEEN" \
    --deletion-policy Delete --class chainvol-backup-delete --managed-by "$NODE_NAME" --apply >/dev/null || return 1
  local snaps=() i
  for i in 0 1 2; do snaps+=("$(vs_name "data-web-$i" "$(sed -n "$((i + 1))p" <<<"$R1")")"); done
  ready sts "${snaps[@]}" || return 1
  expect "imported snapshots in sts" "$(k -n sts get volumesnapshot -o name | wc -l)" 3 || return 1
  pvc sts web0-imported e2e-ext4 1Gi "${snaps[0]}"
  local got; got=$(run_pod sts read-imported web0-imported "$STS_READ") || return 1
  expect "web-0 restored from its imported snapshot" "$got" "$(printf 'web-0 round 1\nweb-0 round 1\nblob-ok')" || return 1
  local contents; contents=$(for s in "${snaps[@]}"; do content_of sts "$s"; echo; done)
  local b0 g0; b0=$(bucket_bytes) g0=$(metric chainvol_gc_deleted_bytes_total) || return 1
  k -n sts delete volumesnapshot "${snaps[@]}" --wait=true --timeout=120s >/dev/null || return 1
  local c
  for c in $contents; do until_true "content $c deleted" 120 sh -c "! '$KUBECTL' get volumesnapshotcontent $c" || return 1; done
  local want=$((3 * STS_BLOB * 3 / 4))
  until_true "bucket shrinks by $want bytes" 120 sh -c "[ \$(( $b0 - \$(du -sb /var/lib/chainvol/backups | cut -f1) )) -ge $want ]" || {
    log "bucket: $b0 bytes before, $(bucket_bytes) after; gc deleted $(metric chainvol_gc_deleted_bytes_total) bytes in all"; return 1; }
  local b1 g1; b1=$(bucket_bytes) g1=$(metric chainvol_gc_deleted_bytes_total)
  (( g1 - g0 >= want )) || { log "chainvol_gc_deleted_bytes_total rose by $((g1 - g0)), want >= $want"; return 1; }
  local ids h2
  for i in 0 1 2; do
    ids=$(ctl backup ls "sts/data-web-$i" -o json | jq -r '[.[].id] | join(" ")')
    h2=$(sed -n "$((i + 1))p" <<<"$R2")
    expect "backups left of sts/data-web-$i (the second round)" "$ids" "${h2##*@}" || return 1
  done
  log "  deleted 3 imported Delete-class snapshots: bucket $b0 -> $b1 bytes (gc freed $((g1 - g0))); second round kept"
}
