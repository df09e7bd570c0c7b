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

# s_instant_driver_restart: the node's chainvol-csi container is killed
# (SIGKILL of the driver's process) while a pod reads an instant restore
# of bigsnap that still hydrates; the kubelet starts the container again,
# the new driver takes the volume's FUSE connection over from the fd-keeper
# container, and the pod's read of the whole file ends with the source's
# checksum, no I/O error; the container's restart count grew and its log
# says it took the connection over. Needs s_long_restore's bigsnap.
s_instant_driver_restart() {
  [[ -n ${BIG_SUM:-} ]] || { log "needs s_long_restore first (E2E_ONLY='long restore|driver restart')"; return 1; }
  instant_class
  pvc bigapp big-kept e2e-instant "${BIG_GIB}Gi" bigsnap
  pod bigapp keptreader big-kept "md5sum /data/random | cut -d' ' -f1 > /dev/termination-log"
  until_true "reader running" 300 sh -c "[ \"\$('$KUBECTL' -n bigapp get pod keptreader -o 'jsonpath={.status.phase}')\" = Running ]" || return 1
  local pv vol node; pv=$(pv_of bigapp big-kept)
  vol=$(k get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  node=$(k get pv "$pv" -o 'jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')
  local npod; npod=$(k -n chainvol-system get pod -l app.kubernetes.io/component=node \
    --field-selector "spec.nodeName=$node" -o 'jsonpath={.items[0].metadata.name}')
  local restarts='{.status.containerStatuses[?(@.name=="chainvol-csi")].restartCount}' before
  before=$(jp chainvol-system "pod/$npod" "$restarts")
  sleep 3 # the pod reads, the volume hydrates
  [[ $(jp bigapp pod/keptreader '{.status.phase}') == Running ]] || { log "the reader ended before the kill: nothing proved"; return 1; }
  local pid; pid=$(driver_pid "$node") || { log "no chainvol-csi process of node $node with -fd-keeper"; return 1; }
  kill -KILL "$pid"
  log "  killed the driver of node $node (pid $pid) while pod keptreader read volume $vol"
  local t0=$SECONDS rc
  while :; do
    finished bigapp keptreader; rc=$?
    (( rc == 0 )) && break
    (( rc == 2 )) && return 1
    (( SECONDS - t0 < 900 )) || { log "pod bigapp/keptreader did not finish"; return 1; }
    sleep 1
  done
  expect "checksum read across the driver's restart" "$(message bigapp keptreader)" "$BIG_SUM" || return 1
  local after; after=$(jp chainvol-system "pod/$npod" "$restarts")
  (( after > before )) || { log "chainvol-csi restart count $before -> $after: the kill did not restart the container"; return 1; }
  k -n chainvol-system logs "$npod" -c chainvol-csi | grep -q "took over the FUSE connection.*$vol" || {
    log "the restarted driver's log does not say it took over volume $vol"; return 1; }
  k -n bigapp delete pod keptreader --wait=true >/dev/null
  log "  pod read the whole file across the restart (${before} -> ${after} restarts) with the source's checksum"
}

# driver_pid NODE: the host pid of the chainvol-csi driver of NODE run with
# a descriptor keeper (its command line names both).
driver_pid() {
  local p
  for p in $(pgrep -f -- '-fd-keeper='); do
    tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- "-node-id=$1 " && { echo "$p"; return 0; }
  done
  return 1
}
