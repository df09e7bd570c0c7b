# scenarios_populator.sh: the scenarios of issue 26, claims filled by the
# volume populator (chainvol-populator) from a BackupSource named in their
# spec.dataSourceRef. Helpers come from kube.sh, scenarios.sh and
# scenarios_apps.sh (expect, snapshot, run_pod, ctl, gone_ns).

POP_NS=chainvol-system

# pop_classes: a class with no parameters (the backup's fsType is kept).
pop_classes() { storage_class e2e-plain; }

# bsource NS NAME CHAIN BACKUP: a BackupSource written by chainvolctl k8s source.
bsource() {
  ctl k8s source --namespace "$1" --name "$2" --chain "$3" --backup "$4" | apply
}

# popclaim NS NAME CLASS SIZE SOURCE: a claim filled from a BackupSource.
popclaim() { pvc "$1" "$2" "$3" "$4" "" "$5"; }

# leftovers: what the populator made that still exists (prime claims and
# snapshots, contents, PVs once bound to a prime claim), one a line.
leftovers() {
  { k -n "$POP_NS" get pvc,volumesnapshot -l chainvol.csi.io/populator-for -o name
    k get volumesnapshotcontent -l chainvol.csi.io/populator-for -o name
    k get pv -o json | jq -r '.items[] | select(.spec.claimRef.namespace == "'"$POP_NS"'" and (.spec.claimRef.name | startswith("prime-"))) | "pv/" + .metadata.name'
  } 2>/dev/null
}

# none_left: true when leftovers lists nothing.
none_left() { [[ -z $(leftovers) ]]; }

# no_leftovers WHAT: wait until the populator's objects are all gone.
no_leftovers() {
  until_true "$1: no prime claim, snapshot, content or PV left" 120 none_left || {
    log "left: $(leftovers | tr '\n' ' ')"; return 1; }
}

# bound_after NS CLAIM: seconds (tenths) until the claim is Bound.
bound_after() {
  local t0; t0=$(date +%s.%N)
  until [[ $(jp "$1" "pvc/$2" '{.status.phase}') == Bound ]]; do
    (( $(date +%s) - ${t0%.*} > 300 )) && { log "claim $1/$2 not bound: $(events "$1" PersistentVolumeClaim "$2" | tail -3)"; return 1; }
    sleep 0.2
  done
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

# s_pop_claim: a 1 GiB XFS backup fills a claim through the populator
# under WaitForFirstConsumer (waiting event first, then the files and the
# backup's fsType); the time to Bound is compared with a fromBackup class
# restoring the same backup into a claim of the same name.
s_pop_claim() {
  k -n "$POP_NS" rollout status deploy/chainvol-populator --timeout=180s >/dev/null || {
    log "populator not running: $(k -n "$POP_NS" get pods -l app.kubernetes.io/component=populator -o wide 2>&1; k -n "$POP_NS" logs deploy/chainvol-populator --tail=30 2>&1)"; return 1; }
  pop_classes
  k create namespace pop >/dev/null
  pvc pop data e2e-xfs 2Gi
  local want; want=$(run_pod pop w data "$WRITE1 && head -c 1000M /dev/urandom > /data/tree/big && sync && $LIST" 600) || return 1
  local h; h=$(snapshot pop s1 data) || return 1
  local pv; pv=$(pv_of pop data)
  k -n pop delete pvc data --wait=true --timeout=120s >/dev/null || return 1
  until_true "PV $pv deleted" 120 sh -c "! '$KUBECTL' get pv $pv" || return 1
  bsource pop src '${pvc.namespace}/${pvc.name}' latest || return 1
  popclaim pop data e2e-plain 2Gi src
  until_true "WaitForFirstConsumer event" 60 sh -c "'$KUBECTL' -n pop describe pvc data | grep -q WaitingForFirstConsumer" || return 1
  expect "claim phase before a consumer" "$(jp pop pvc/data '{.status.phase}')" Pending || return 1
  pod pop r data "$LIST"
  local took; took=$(bound_after pop data) || return 1
  until_true "reader done" 300 finished pop r || return 1
  expect "files restored by the populator" "$(message pop r)" "$want" || return 1
  k -n pop delete pod r --wait=true >/dev/null
  pv=$(pv_of pop data)
  expect "fsType of the populated PV" "$(k get pv "$pv" -o 'jsonpath={.spec.csi.volumeAttributes.fsType}')" xfs || return 1
  expect "node affinity of the populated PV" "$(k get pv "$pv" -o 'jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')" "$NODE_NAME" || return 1
  expect "BackupSource status: restored backup" "$(jp pop backupsource/src '{.status.claims[0].resolved}')" "${h#backup:}" || return 1
  expect "BackupSource status: Ready" "$(jp pop backupsource/src '{.status.claims[0].conditions[0].status}')" True || return 1
  no_leftovers "populated claim" || return 1
  # The same backup through a fromBackup class (e2e-restore: @latest of
  # the claim's own NAMESPACE/NAME), same claim name, same cluster run.
  k -n pop delete pvc data --wait=true --timeout=120s >/dev/null || return 1
  until_true "PV $pv deleted" 120 sh -c "! '$KUBECTL' get pv $pv" || return 1
  pvc pop data e2e-restore 2Gi
  pod pop r2 data "$LIST"
  local took2; took2=$(bound_after pop data) || return 1
  until_true "reader done" 300 finished pop r2 || return 1
  expect "files restored by the fromBackup class" "$(message pop r2)" "$want" || return 1
  k -n pop delete pod r2 --wait=true >/dev/null
  log "  1 GiB XFS backup: claim to Bound ${took}s through the populator, ${took2}s through a fromBackup class; fsType xfs, status $(jp pop backupsource/src '{.status.claims[0].resolved}')"
}

# s_pop_missing: a claim naming a backup that does not exist shows the
# reason in kubectl describe pvc and leaves no prime claim or PV.
s_pop_missing() {
  bsource pop ghost 'pop/no-such-chain' latest || return 1
  popclaim pop lost e2e-plain 1Gi ghost
  pod pop lost-reader lost 'cat /data/x'
  until_true "BackupNotFound on the claim" 120 sh -c "'$KUBECTL' -n pop describe pvc lost | grep -q BackupNotFound" || {
    log "events: $(events pop PersistentVolumeClaim lost)"; return 1; }
  local ev; ev=$(events pop PersistentVolumeClaim lost | grep -m1 BackupNotFound)
  expect "claim phase" "$(jp pop pvc/lost '{.status.phase}')" Pending || return 1
  expect "BackupSource status reason" "$(jp pop backupsource/ghost '{.status.claims[0].conditions[0].reason}')" BackupNotFound || return 1
  no_leftovers "missing backup" || return 1
  k -n pop delete pod lost-reader --wait=true >/dev/null
  k -n pop delete pvc lost --wait=true --timeout=60s >/dev/null || return 1
  log "  ${ev:0:300}"
}

# mid_restore NS: a claim of the 5 GiB backup of bigapp/big (the long
# restore's) with a consumer; returns once its prime claim exists and the
# driver reports progress.
mid_restore() {
  k create namespace "$1" >/dev/null
  bsource "$1" big bigapp/big latest || return 1
  popclaim "$1" data e2e-plain "${BIG_GIB}Gi" big
  pod "$1" reader data 'md5sum /data/random | cut -d" " -f1 > /dev/termination-log'
  local uid; uid=$(jp "$1" pvc/data '{.metadata.uid}')
  until_true "prime claim of $1/data" 60 sh -c "'$KUBECTL' -n $POP_NS get pvc prime-$uid" || return 1
  until_true "restore in progress for $1/data" 60 sh -c "'$KUBECTL' -n $POP_NS get events --field-selector involvedObject.name=prime-$uid -o jsonpath='{.items[*].message}' | grep -q 'in progress'" || {
    log "prime events: $(events $POP_NS PersistentVolumeClaim "prime-$uid")"; return 1; }
}

# restores_done: no restore job is published in the driver's state
# directory (pkg/jobrec records: removed when a job ends).
restores_done() {
  [[ $("$BIN/chainvolctl" jobs -o json | jq '[(. // [])[] | select(.kind == "restore")] | length') == 0 ]]
}

# s_pop_delete_mid: deleting a claim while it is being populated removes
# the prime claim and the volume.
s_pop_delete_mid() {
  k -n bigapp delete pvc big-restored --wait=false >/dev/null 2>&1   # room in the pool
  mid_restore popdel || return 1
  k -n popdel delete pod reader --wait=false >/dev/null
  k -n popdel delete pvc data --wait=true --timeout=120s >/dev/null || return 1
  # The provisioner finishes a CreateVolume it started for the deleted
  # prime claim; its PV, bound to no claim, is then deleted: wait for the
  # driver's restore job to end, then for that PV to go.
  until_true "restore of the deleted claim ended" 300 restores_done || return 1
  no_leftovers "claim deleted mid-restore" || return 1
  expect "PVs of popdel" "$(k get pv -o json | jq '[.items[] | select(.spec.claimRef.namespace == "popdel")] | length')" 0 || return 1
  k delete namespace popdel --wait=true --timeout=120s >/dev/null || return 1
  log "  claim deleted mid-restore: no prime claim, snapshot, content or PV left"
}

# s_pop_kill: the populator's pod killed mid-restore; the claim still
# binds, to one volume.
s_pop_kill() {
  mid_restore popkill || return 1
  local p; p=$(k -n "$POP_NS" get pods -l app.kubernetes.io/component=populator -o jsonpath='{.items[0].metadata.name}')
  k -n "$POP_NS" delete pod "$p" --grace-period=0 --force >/dev/null 2>&1
  local took; took=$(bound_after popkill data) || return 1
  until_true "reader done" 600 finished popkill reader || return 1
  [[ -n $(message popkill reader) ]] || return 1
  expect "PVs ever bound for popkill/data" "$(k get pv -o json | jq '[.items[] | select(.metadata.annotations["chainvol.csi.io/populated-from"] == "popkill/data")] | length')" 1 || return 1
  no_leftovers "populator killed" || return 1
  k delete namespace popkill --wait=true --timeout=180s >/dev/null || return 1
  log "  populator pod $p killed mid-restore; claim bound ${took}s after, one PV"
}

# popsts_write NS: members data-db-0 (XFS), -1 (ext4), -2 (XFS) written
# with ROUND 1, backed up, ROUND 2, backed up; prints T between the rounds.
popsts_write() {
  local i cls
  for i in 0 1 2; do
    cls=e2e-xfs; (( i == 1 )) && cls=e2e-ext4
    pvc "$1" "data-db-$i" "$cls" 1Gi
  done
  local r
  for r in 1 2; do
    for i in 0 1 2; do
      run_pod "$1" "w$r-$i" "data-db-$i" "echo db-$i round $r > /data/who && sync && echo ok > /dev/termination-log" >/dev/null || return 1
      snapshot "$1" "r$r-db-$i" "data-db-$i" >/dev/null || return 1
    done
    if (( r == 1 )); then sleep 1.2; date -u +%FT%TZ; sleep 1.2; fi
  done
}

# s_pop_statefulset: a 3-replica StatefulSet whose volumeClaimTemplates
# name one templated BackupSource at before:T comes back with each
# ordinal's own data of that moment, XFS and ext4 members each with their
# backup's filesystem.
s_pop_statefulset() {
  pop_classes   # its own class too, so that E2E_ONLY can run it alone
  k create namespace popsts >/dev/null
  local t; t=$(popsts_write popsts) || return 1
  gone_ns popsts || return 1
  k create namespace popsts >/dev/null
  bsource popsts db '${pvc.namespace}/${pvc.name}' "before:$t" || return 1
  statefulset popsts db e2e-plain '"cat /data/who; touch /tmp/ready; exec sleep 1000000"' '' \
    '{apiGroup: chainvol.csi.io, kind: BackupSource, name: db}' || return 1
  k -n popsts scale statefulset db --replicas=0 >/dev/null
  until_true "members of popsts/db stopped" 120 sh -c "[ -z \"\$('$KUBECTL' -n popsts get pods -l app=db -o name)\" ]" || return 1
  local i got fs want
  for i in 0 1 2; do
    got=$(run_pod popsts "read-$i" "data-db-$i" 'cat /data/who > /dev/termination-log') || return 1
    expect "member $i from before:$t" "$got" "db-$i round 1" || return 1
    want=xfs; (( i == 1 )) && want=ext4
    fs=$(k get pv "$(pv_of popsts "data-db-$i")" -o 'jsonpath={.spec.csi.volumeAttributes.fsType}')
    expect "member $i fsType" "$fs" "$want" || return 1
  done
  no_leftovers "StatefulSet" || return 1
  log "  db-0..2 (xfs, ext4, xfs) filled from one BackupSource at before:$t, each its own round-1 data"
}
