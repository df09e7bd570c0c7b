# Scenarios of instant restore (issue 27): a claim restored with
# restoreMode "instant" is read by its pod while hydration still runs.

# instant_class: the StorageClass of instant restores from a VolumeSnapshot
# (the backup's filesystem is kept: no fstype).
instant_class() { storage_class e2e-instant '{restoreMode: instant}'; }

# klog_epoch LINE: the time of a klog line ("I1203 10:23:37.070855 ...") as
# seconds since the epoch (the year is this one's).
klog_epoch() {
  local d t; read -r d t _ <<<"$1"
  date -u -d "$(date -u +%Y)-${d:1:2}-${d:3:2} $t" +%s.%N
}

# s_instant_restore: the ${BIG_GIB} GiB backup of s_long_restore (bigsnap)
# restored instantly: the claim binds and a pod reads the first MiB of the
# file before hydration has ended (the read's time against the driver's
# "hydration done"); a second pod reads the whole file with the source's
# checksum. Needs s_long_restore's bigsnap and its checksum in BIG_SUM.
s_instant_restore() {
  [[ -n ${BIG_SUM:-} ]] || { log "needs s_long_restore first (E2E_ONLY='long restore|instant')"; return 1; }
  instant_class
  local t0=$SECONDS
  pvc bigapp big-instant e2e-instant "${BIG_GIB}Gi" bigsnap
  local first; first=$(run_pod bigapp instreader big-instant \
    'head -c 1048576 /data/random | md5sum >/dev/null && date -u +%s.%N > /dev/termination-log' 300) || return 1
  local bound=$((SECONDS - t0)) vol; vol=$(k get pv "$(pv_of bigapp big-instant)" -o 'jsonpath={.spec.csi.volumeHandle}')
  local got; got=$(run_pod bigapp instsum big-instant "md5sum /data/random | cut -d' ' -f1 > /dev/termination-log" 900) || return 1
  expect "instant restore checksum" "$got" "$BIG_SUM" || return 1
  local done_line logs="'$KUBECTL' -n chainvol-system logs -l app.kubernetes.io/component=node -c chainvol-csi --tail=-1"
  until_true "hydration of $vol done" 300 sh -c "$logs | grep -q 'hydration done.*$vol'" || return 1
  done_line=$(sh -c "$logs" | grep "hydration done.*$vol" | tail -1)
  local hydrated; hydrated=$(klog_epoch "$done_line")
  awk -v r="$first" -v h="$hydrated" 'BEGIN { exit !(r < h) }' || {
    log "the first pod read at $first, after hydration ended at $hydrated: not a read during hydration"; return 1; }
  log "  instant restore of ${BIG_GIB}GiB: bound and first MiB read ${bound}s after the claim; read $(awk -v r="$first" -v h="$hydrated" 'BEGIN { printf "%.1f", h - r }')s before hydration ended; checksum equal"
}
