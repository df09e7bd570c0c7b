# scenarios_lock.sh: the scenarios of issue 30 on the real cluster: a
# VolumeSnapshotClass with a retention policy whose scheduled rounds leave
# exactly the backups the policy keeps in the bucket, and a backup under
# S3 Object Lock whose VolumeSnapshot deletion the driver refuses until
# its date. Both run against versitygw on the node (a versioned posix
# backend, as AWS versions every Object Lock bucket), the driver upgraded
# with the two targets of test/cluster/values-lock.yaml. They run last:
# the upgrade makes `gfs` the default target.
# Helpers come from kube.sh, scenarios.sh and scenarios_apps.sh.

LOCK_S3_ADDR=$NODE_IP:9000
GFS_URL="s3://chainvol-gfs/c?endpoint=$LOCK_S3_ADDR&region=us-east-1&insecure=true&style=path"
LOCKED_URL="s3://chainvol-lock/c?endpoint=$LOCK_S3_ADDR&region=us-east-1&insecure=true&style=path&lock=governance&retain=1d"

# lctl ARGS...: chainvolctl with the two S3 targets and their keys.
lctl() { ctl --credentials-file "$RUN/s3-lock.env" --target gfs="$GFS_URL" --target locked="$LOCKED_URL" "$@"; }

# s_lock_up: versitygw with a versioning directory on the node's address,
# in the cluster's netns (its pid goes to teardown's list); both buckets
# made by `chainvolctl target init` (the locked one with Object Lock, as
# for a lock= target); the credentials Secret; the driver upgraded with
# values-lock.yaml; the two backup classes under test.
s_lock_up() {
  local ak sk
  ak=AK$(openssl rand -hex 9); sk=$(openssl rand -hex 20)
  mkdir -p "$RUN/s3-lock/data" "$RUN/s3-lock/versions"
  ( export ROOT_ACCESS_KEY_ID=$ak ROOT_SECRET_ACCESS_KEY=$sk
    nsenter --net="/run/netns/$NETNS" "$REPO/bin/versitygw" --port "$LOCK_S3_ADDR" --health /health --quiet \
      posix --versioning-dir "$RUN/s3-lock/versions" "$RUN/s3-lock/data" > "$RUN/logs/versitygw-lock.log" 2>&1 &
    echo $! > "$RUN/pids/versitygw-lock"; echo versitygw-lock >> "$RUN/pids/order" )
  until_true "versitygw (versioned) up" 30 nsenter --net="/run/netns/$NETNS" curl -sf "http://$LOCK_S3_ADDR/health" || return 1
  printf 'accessKeyID=%s\nsecretAccessKey=%s\n' "$ak" "$sk" > "$RUN/s3-lock.env"
  chmod 600 "$RUN/s3-lock.env"
  lctl target init gfs >/dev/null || return 1
  lctl target init locked >/dev/null || return 1
  local check; check=$(lctl target check locked 2>&1) || { log "$check"; return 1; }
  grep -qi governance <<<"$check" || { log "target check of the locked target does not name its lock: $check"; return 1; }
  k -n chainvol-system create secret generic chainvol-s3-credentials --from-file=credentials="$RUN/s3-lock.env" >/dev/null || return 1
  (cd "$REPO" && go run ./hack/helmtemplate -n chainvol-system "${CHART_VALUES[@]}" \
    -f test/cluster/values-lock.yaml bin/image/chart/chainvol) > "$RUN/chainvol-lock.yaml" || return 1
  k apply -f "$RUN/chainvol-lock.yaml" >/dev/null || return 1
  until_true "chainvol DaemonSet with the S3 targets" 180 "$KUBECTL" -n chainvol-system rollout status ds/chainvol-node --timeout=1s || return 1
  until_true "CSINode registration" 60 sh -c \
    "'$KUBECTL' get csinode '$NODE_NAME' -o jsonpath='{.spec.drivers[*].name}' | grep -qw chainvol.csi.io" || return 1
  backup_class e2e-gfs Delete 'backupTarget: gfs, keepLast: "2"'
  backup_class e2e-locked Delete 'backupTarget: locked'
  log "  versitygw (versioned) at $LOCK_S3_ADDR: buckets chainvol-gfs and chainvol-lock (Object Lock); driver upgraded"
}

# backup_ids TARGET:CHAIN: the ids `backup ls` lists, sorted, one a line.
backup_ids() { lctl backup ls "$1" -o json | jq -r '.. | objects | select(has("id") and has("createdAt")) | .id' | sort; }

# s_class_retention: four scheduled rounds of a claim through the class
# with keepLast: "2" (the driver's class policy, applied by its background
# gc after each ready backup): the bucket holds exactly the two newest
# backups, and the older of them restores the tree it was taken of.
s_class_retention() {
  k create namespace gfs >/dev/null
  pvc gfs data e2e-ext4 1Gi
  local r ids=() lists=() h
  for r in 1 2 3 4; do
    lists+=("$(run_pod gfs "w$r" data "mkdir -p /data/tree && dd if=/dev/urandom of=/data/tree/round$r bs=64k count=8 2>/dev/null && sync && $LIST")") || return 1
    h=$(snapshot gfs "round$r" data e2e-gfs) || return 1
    ids+=("${h##*@}")
  done
  local want; want=$(printf '%s\n' "${ids[2]}" "${ids[3]}" | sort)
  local got t0=$SECONDS
  # The policy is applied by the background gc one -gc-delay (2s) after
  # each ready backup.
  until got=$(backup_ids gfs:gfs/data); [[ $got == "$want" ]] || (( SECONDS - t0 > 120 )); do sleep 2; done
  expect "backups of gfs/data in the bucket after 4 rounds with keepLast 2" "$got" "$want" || return 1
  pvc gfs third e2e-ext4 1Gi round3
  got=$(run_pod gfs r3 third "$LIST") || return 1
  expect "files restored from round 3 (kept)" "$got" "${lists[2]}" || return 1
  log "  rounds ${ids[*]}: the bucket keeps ${ids[2]} ${ids[3]}; round 3 restores its own tree"
}

# s_locked_delete: a backup under Object Lock (retain=1d): deleting its
# VolumeSnapshot (class deletionPolicy Delete) is refused by the driver
# (DeleteSnapshot: FailedPrecondition naming the retain-until date) and
# retried by the csi-snapshotter: the content and the backup stay; the
# driver's BackupRetained event on the content names the date (the
# sidecar's own event does not), and so does the sidecar's log.
s_locked_delete() {
  k create namespace lk >/dev/null
  pvc lk data e2e-ext4 1Gi
  run_pod lk w1 data "$WRITE1 && $LIST" >/dev/null || return 1
  local h; h=$(snapshot lk l1 data e2e-locked) || return 1
  local content; content=$(content_of lk l1)
  local id=${h##*@} until
  until=$(date -u -d "@$(( $(date +%s) + 86400 ))" +%Y-%m-%d)
  k -n lk delete volumesnapshot l1 --wait=false >/dev/null || return 1
  until_true "a DeleteSnapshot of $content refused" 90 sh -c \
    "'$KUBECTL' get events -A --field-selector involvedObject.name=$content -o jsonpath='{.items[*].reason}' | grep -q SnapshotDeleteError" || return 1
  sleep 5
  k get volumesnapshotcontent "$content" >/dev/null || { log "content $content is gone"; return 1; }
  expect "backup still in the bucket" "$(backup_ids locked:lk/data)" "$id" || return 1
  local vs="gone"; k -n lk get volumesnapshot l1 >/dev/null 2>&1 && vs="still there ($(jp lk volumesnapshot/l1 '{.metadata.deletionTimestamp}'))"
  log "  VolumeSnapshot lk/l1: $vs"
  until_true "the driver's BackupRetained event on $content" 60 sh -c \
    "'$KUBECTL' -n default get events --field-selector involvedObject.name=$content,reason=BackupRetained -o jsonpath='{.items[*].message}' | grep -q '$until'" || true
  local ev; ev=$(k get events -A --field-selector "involvedObject.name=$content" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}')
  log "  events on $content: $(tr '\n' ';' <<<"$ev")"
  local status; status=$(k get volumesnapshotcontent "$content" -o jsonpath='{.status.error}')
  log "  content status.error: ${status:-none}"
  # The sidecar's own log (the container log files of the kubelet).
  local slog; slog=$(grep -h "FailedPrecondition" /var/log/pods/chainvol-system_*/csi-snapshotter/*.log 2>/dev/null | grep "$id" | tail -1)
  log "  csi-snapshotter: ${slog:0:400}"
  grep -q "$until" <<<"$slog" || log "  (the sidecar's log under /var/log/pods does not show the refusal naming $until)"
  grep -q "BackupRetained: .*$until" <<<"$ev" || { log "no BackupRetained event naming $until on $content"; return 1; }
  log "  DeleteSnapshot of $id refused while retained until $until: content and backup kept"
}
