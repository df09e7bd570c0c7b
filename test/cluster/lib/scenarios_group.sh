# scenarios_group.sh: issue 31's StatefulSet restored from one group
# backup. The group is taken through the driver's CSI GroupController
# (CreateVolumeGroupSnapshot with backup=true), not through a
# VolumeGroupSnapshot object: the csi-snapshotter in node-deployment mode
# cannot route a group to its node, so the chart keeps the sidecar's gate
# off (docs/applications.md "Through Kubernetes"). Helpers come from
# kube.sh, scenarios.sh and scenarios_apps.sh (sts, sts_back_at, gone_ns).

# The first node's driver socket: the host's /var/lib/kubelet is that
# node's kubelet root (lib/cluster.sh), and a unix socket is reached from
# any network namespace, so chainvolctl runs on the host, as the populator
# scenarios' does, with no exec through the kubelet (kube.sh).
GROUP_SOCK=unix:///var/lib/kubelet/plugins/chainvol.csi.io/csi.sock

# gctl ARGS...: chainvolctl's CSI client on the first node's driver.
gctl() { "$BIN/chainvolctl" csi --endpoint "$GROUP_SOCK" "$@"; }

# web_vols NS: the volume ids of the claims data-web-0..2, one a line.
web_vols() {
  local i
  for i in 0 1 2; do k get pv "$(pv_of "$1" "data-web-$i")" -o jsonpath='{.spec.csi.volumeHandle}'; echo; done
}

# group_backup NAME NS: one group backup (CreateVolumeGroupSnapshot NAME,
# backup=true) of the three members of NS/web, waited for until ready
# (every member archived); prints the group as JSON (CSI field names).
group_backup() {
  local srcs=() v
  for v in $(web_vols "$2"); do srcs+=(--source "$v"); done
  gctl group create "$1" "${srcs[@]}" --param backup=true --wait -o json
}

# check_group NS JSON: the group is ready, has the three members, and
# member i's snapshot is a backup in the chain NS/data-web-i, all under one
# backup id. Prints the group id.
check_group() {
  expect "group ready_to_use" "$(jq -r .ready_to_use <<<"$2")" true || return 1
  expect "group members" "$(jq '.snapshots | length' <<<"$2")" 3 || return 1
  local gid i v s ids=()
  gid=$(jq -r .group_snapshot_id <<<"$2")
  i=0
  for v in $(web_vols "$1"); do
    s=$(jq -r --arg v "$v" '.snapshots[] | select(.source_volume_id == $v) | .snapshot_id' <<<"$2")
    [[ $s == backup:*":$1/data-web-$i@"* ]] || { log "member $i ($v): snapshot [$s], want a backup of $1/data-web-$i"; return 1; }
    expect "member $i's group id" "$(jq -r --arg v "$v" '.snapshots[] | select(.source_volume_id == $v) | .group_snapshot_id' <<<"$2")" "$gid" || return 1
    ids+=("${s##*@}")
    i=$((i + 1))
  done
  [[ ${ids[0]} == "${ids[1]}" && ${ids[1]} == "${ids[2]}" ]] || { log "members' backup ids differ: ${ids[*]}"; return 1; }
  echo "$gid"
}

# s_statefulset_group: the 3-member StatefulSet of issue 18 (sts) writes
# round 1 and one group backup takes all its members; round 2 and a
# second group follow, so the chains' newest backups are not the first
# group's. After the namespace is lost, one class with
# `${pvc.namespace}/${pvc.name}@group:GID` (the first group's id) gives
# every member its own round-1 data.
s_statefulset_group() {
  k create namespace grp >/dev/null
  sts grp e2e-ext4 1 || return 1
  local t0=$SECONDS g1 g2 gid1 gid2
  g1=$(group_backup grp-r1 grp) || return 1
  gid1=$(check_group grp "$g1") || return 1
  log "  group $gid1 of grp/web's 3 members ready in $((SECONDS - t0))s"
  sts grp e2e-ext4 2 || return 1
  g2=$(group_backup grp-r2 grp) || return 1
  gid2=$(check_group grp "$g2") || return 1
  [[ $gid1 != "$gid2" ]] || { log "two groups, one id $gid1"; return 1; }
  gone_ns grp || return 1
  sts_back_at grp e2e-group "group:$gid1" || return 1
  log "  groups $gid1 (round 1) and $gid2 (round 2); @group:$gid1 restored each member's round-1 data"
  gone_ns grp
}
