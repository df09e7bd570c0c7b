#!/usr/bin/env bash
# hack/demo.sh - chainvol's main job, end to end, on this machine:
#
#   a volume with real files -> snapshot archived as a full backup -> files
#   changed -> second snapshot archived as an incremental backup -> a new
#   volume restored from demo/data@latest -> every file checked by sha256.
#
# Everything goes through the driver's CSI socket (bin/chainvol-csi, driven by
# bin/chainvolctl csi ...), as the external-provisioner, external-snapshotter
# and kubelet would call it; the backups land in the driver's embedded
# default target, file://$STATE/backups. Needs root (loop devices, mounts).
# Run it with `make demo`. Exit status 0 and a final PASS line on success.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CSI_BIN=$ROOT/bin/chainvol-csi
CTL_BIN=$ROOT/bin/chainvolctl
POOL_SIZE=${DEMO_POOL_SIZE:-3G}  # sparse; holds two 1 GiB volumes and snapshots
VOL_SIZE=1Gi

die() { echo "demo: $*" >&2; exit 1; }

[[ $EUID -eq 0 ]] || die "needs root (loop devices, mkfs, mount): run 'sudo make demo'"
for b in "$CSI_BIN" "$CTL_BIN"; do [[ -x $b ]] || die "$b is missing: run 'make build' first"; done
for t in losetup mkfs.xfs mount umount sha256sum find truncate; do
  command -v "$t" >/dev/null || die "$t is not installed (Debian: apt-get install xfsprogs util-linux coreutils)"
done

TMP=$(mktemp -d /tmp/chainvol-demo.XXXXXX)
STATE=$TMP/state POOL=$TMP/pool SOCK=$TMP/csi.sock
ENDPOINT=unix://$SOCK
POOL_DEV="" DRIVER_PID=""
# What exists, so the EXIT trap undoes exactly that, in reverse.
PUBLISHED=() STAGED=() VOLUMES=() SNAPSHOTS=()

ctl() { "$CTL_BIN" csi --endpoint "$ENDPOINT" --timeout 60s "$@"; }

# --- step timing --------------------------------------------------------------
STEP_NAMES=() STEP_MS=() CUR="" CUR_T0=0
now_ms() { date +%s%3N; }
end_step() {
  [[ -n $CUR ]] || return 0
  STEP_NAMES+=("$1$CUR") STEP_MS+=($(($(now_ms) - CUR_T0)))
  CUR=""
}
step() { end_step ""; CUR=$1 CUR_T0=$(now_ms); printf '\n==> %s\n' "$1"; }
summary() {
  echo; echo "Steps:"
  local i
  for i in "${!STEP_NAMES[@]}"; do
    printf '  %7.2fs  %s\n' "$(awk "BEGIN{print ${STEP_MS[$i]}/1000}")" "${STEP_NAMES[$i]}"
  done
}

# --- cleanup ------------------------------------------------------------------
cleanup() {
  local rc=$? i
  trap - EXIT
  set +e
  if [[ $rc -ne 0 ]]; then end_step "FAILED: "; fi
  step "clean up"
  for ((i = ${#PUBLISHED[@]} - 1; i >= 0; i--)); do ctl unpublish ${PUBLISHED[$i]}; done
  for ((i = ${#STAGED[@]} - 1; i >= 0; i--)); do ctl unstage ${STAGED[$i]}; done
  for ((i = ${#SNAPSHOTS[@]} - 1; i >= 0; i--)); do ctl snapshot delete "${SNAPSHOTS[$i]}"; done
  for ((i = ${#VOLUMES[@]} - 1; i >= 0; i--)); do ctl volume delete "${VOLUMES[$i]}"; done
  if [[ -n $DRIVER_PID ]]; then kill "$DRIVER_PID" 2>/dev/null; wait "$DRIVER_PID" 2>/dev/null; fi
  # Whatever the calls above could not undo: mounts under $TMP (deepest
  # first), loop devices over pool files, then the pool itself.
  findmnt -rn -o TARGET | grep "^$TMP/" | sort -r | while read -r m; do umount -l "$m"; done
  losetup -l -n -O NAME,BACK-FILE | awk -v p="$POOL/" 'index($2, p) == 1 {print $1}' | while read -r d; do losetup -d "$d"; done
  mountpoint -q "$POOL" && umount "$POOL"
  [[ -n $POOL_DEV ]] && losetup -d "$POOL_DEV"
  if [[ $rc -ne 0 && -f $TMP/driver.log ]]; then
    echo "--- last lines of the driver log ($TMP/driver.log) ---"; tail -n 30 "$TMP/driver.log"
  fi
  rm -rf "$TMP"
  end_step ""
  summary
  if [[ $rc -eq 0 ]]; then
    echo "PASS: backup then incremental backup then restore through the CSI socket; every file matches"
  else
    echo "FAIL: demo exited with status $rc (see the step marked FAILED above)"
  fi
  exit "$rc"
}
trap cleanup EXIT

# sums DIR OUT: sha256 of every regular file under DIR, sorted by path.
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$2"; }

# --- the demo -----------------------------------------------------------------
step "pool: sparse $POOL_SIZE image, XFS with reflink, on a loop device"
truncate -s "$POOL_SIZE" "$TMP/pool.img"
POOL_DEV=$(losetup --find --show "$TMP/pool.img")
mkfs.xfs -q -f -m reflink=1 "$POOL_DEV"
mkdir -p "$POOL" "$STATE"
mount "$POOL_DEV" "$POOL"
echo "pool $POOL on $POOL_DEV; backups go to file://$STATE/backups"

step "start chainvol-csi on $ENDPOINT"
"$CSI_BIN" -endpoint "$ENDPOINT" -node-id demo-node -pool-dir "$POOL" -state-dir "$STATE" \
  -metrics-address "" -v=2 >"$TMP/driver.log" 2>&1 &
DRIVER_PID=$!
for _ in $(seq 100); do
  [[ -S $SOCK ]] && ctl info >/dev/null 2>&1 && break
  kill -0 "$DRIVER_PID" 2>/dev/null || die "chainvol-csi exited during start"
  sleep 0.1
done
ctl info

step "create volume data (1 GiB ext4, PVC demo/data, this node's topology)"
VOL1=$(ctl volume create pvc-demo-data --size "$VOL_SIZE" --fs-type ext4 --node-topology -q \
  --param csi.storage.k8s.io/pvc/name=data --param csi.storage.k8s.io/pvc/namespace=demo)
VOLUMES+=("$VOL1")
echo "volume $VOL1"

step "stage and publish it"
ctl stage "$VOL1" --staging-path "$TMP/stage1" --fs-type ext4
STAGED+=("$VOL1 --staging-path $TMP/stage1")
ctl publish "$VOL1" --staging-path "$TMP/stage1" --target-path "$TMP/pub1" --fs-type ext4
PUBLISHED+=("$VOL1 --target-path $TMP/pub1")

step "write a real directory tree and random files"
SRC=""
for d in /usr/share/doc /usr/share/perl /usr/lib/python3 /usr/local/go/src/net; do
  if [[ -d $d ]]; then SRC=$d; break; fi
done
if [[ -n $SRC ]]; then
  mkdir -p "$TMP/pub1/tree" && cp -a "$SRC/." "$TMP/pub1/tree/"
fi
mkdir -p "$TMP/pub1/random"
for i in $(seq 1 8); do head -c $((i * 1536 * 1024)) /dev/urandom >"$TMP/pub1/random/file$i"; done
du -sh "$TMP/pub1" | awk '{print "wrote " $1 " (tree: '"${SRC:-none}"' + random files)"}'
sums "$TMP/pub1" "$TMP/sums1"
echo "$(wc -l <"$TMP/sums1") files checksummed"

step "snapshot 1 with backup=true (full backup), wait until ready_to_use"
SNAP1=$(ctl snapshot create demo-snap-1 --source "$VOL1" --param backup=true --wait --wait-interval 1s -q)
SNAPSHOTS+=("$SNAP1")
echo "snapshot $SNAP1"

step "change files: overwrite, append, delete, add"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$TMP/pub1/random/file3"
echo "appended by the demo" >>"$TMP/pub1/random/file5"
rm -f "$TMP/pub1/random/file7"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$TMP/pub1/random/new-after-backup-1"
# (mapfile, not a pipe into head: SIGPIPE would fail the pipeline under pipefail)
mapfile -t CHANGE < <(find "$TMP/pub1" -path "$TMP/pub1/random" -prune -o -type f -size +0 -print | sort)
for f in "${CHANGE[@]:0:50}"; do echo "changed by the demo" >>"$f"; done
sums "$TMP/pub1" "$TMP/sums2"
(cd "$TMP/pub1" && find . -type f | sort) >"$TMP/files2"
cmp -s "$TMP/sums1" "$TMP/sums2" && die "the changes did not change any checksum"
echo "$(wc -l <"$TMP/sums2") files checksummed"

step "snapshot 2 with backup=true (incremental), wait until ready_to_use"
SNAP2=$(ctl snapshot create demo-snap-2 --source "$VOL1" --param backup=true --wait --wait-interval 1s -q)
SNAPSHOTS+=("$SNAP2")
echo "snapshot $SNAP2"
"$CTL_BIN" --state-dir "$STATE" backup ls demo/data

step "lose the source: unpublish, unstage and delete volume data (its local snapshots go with it)"
ctl unpublish "$VOL1" --target-path "$TMP/pub1"
ctl unstage "$VOL1" --staging-path "$TMP/stage1"
PUBLISHED=() STAGED=()
ctl volume delete "$VOL1"
VOLUMES=()
# With the source's local snapshots gone, the restore below has no local base: every block comes from the backup target.

step "create volume restored from fromBackup=demo/data@latest (--wait retries while it restores)"
VOL2=$(ctl volume create pvc-demo-restored --size "$VOL_SIZE" --fs-type ext4 --node-topology -q \
  --param fromBackup=demo/data@latest --wait --wait-interval 1s)
VOLUMES+=("$VOL2")
echo "volume $VOL2"

step "stage and publish the restored volume"
ctl stage "$VOL2" --staging-path "$TMP/stage2" --fs-type ext4
STAGED+=("$VOL2 --staging-path $TMP/stage2")
ctl publish "$VOL2" --staging-path "$TMP/stage2" --target-path "$TMP/pub2" --fs-type ext4 --readonly
PUBLISHED+=("$VOL2 --target-path $TMP/pub2")

step "verify every file against the second backup's checksums"
(cd "$TMP/pub2" && find . -type f | sort) >"$TMP/files-restored"
if ! diff -q "$TMP/files2" "$TMP/files-restored" >/dev/null; then
  diff "$TMP/files2" "$TMP/files-restored" | head -n 20
  die "the restored volume does not hold the same files"
fi
if ! (cd "$TMP/pub2" && sha256sum --quiet -c "$TMP/sums2"); then
  die "checksum mismatch in the restored volume"
fi
echo "all $(wc -l <"$TMP/sums2") files match"
