#!/usr/bin/env bash
# hack/demo-s3.sh - docs/operator.md's "Try it on S3 in five minutes", run
# exactly as written there: the shell block between the markers
# <!-- demo-s3 begin --> and <!-- demo-s3 end --> (a versitygw on loopback,
# chainvolctl target init, a full and an incremental backup of an ext4
# image, a restore compared byte for byte and checked by e2fsck, verify
# --all --deep). Only its directory (/tmp/chainvol-s3) and port (7070) are
# replaced, by a fresh temporary directory and DEMO_S3_PORT (default 7070).
# Needs bin/versitygw (make deps) and bin/chainvolctl (make build); no
# root. Run it with `make demo-s3`. Exit status 0 and a final PASS line on
# success; any failing command stops it with its status.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOC=${DEMO_S3_DOC:-$ROOT/docs/operator.md} # another copy, for the test of a failing run
PORT=${DEMO_S3_PORT:-7070}

die() { echo "demo-s3: $*" >&2; exit 1; }

[[ -x $ROOT/bin/versitygw ]] || die "$ROOT/bin/versitygw is missing: run 'make deps' first"
[[ -x $ROOT/bin/chainvolctl ]] || die "$ROOT/bin/chainvolctl is missing: run 'make build' first"
for t in truncate mkfs.ext4 debugfs e2fsck cmp; do
  command -v "$t" >/dev/null || die "$t is not installed (Debian: apt-get install e2fsprogs coreutils diffutils)"
done
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  die "port $PORT is in use on 127.0.0.1: stop what listens there, or set DEMO_S3_PORT"
fi

WORK=$(mktemp -d /tmp/chainvol-s3demo.XXXXXX)
S3_PID=""
cleanup() {
  local rc=$?
  trap - EXIT
  set +ex
  if [[ -n $S3_PID ]]; then kill "$S3_PID" 2>/dev/null; wait "$S3_PID" 2>/dev/null; fi
  if [[ $rc -ne 0 && -f $WORK/versitygw.log ]]; then
    echo "--- versitygw.log ---"; tail -n 20 "$WORK/versitygw.log"
  fi
  rm -rf "$WORK"
  if [[ $rc -eq 0 ]]; then
    echo "PASS: docs/operator.md \"Try it on S3 in five minutes\": target init, full and incremental backup, restore identical, every block verified"
  else
    echo "FAIL: demo-s3 exited with status $rc (the command above failed)"
  fi
  exit "$rc"
}
trap cleanup EXIT

BLOCK=$(awk '/<!-- demo-s3 begin -->/ {f = 1; next} /<!-- demo-s3 end -->/ {f = 0} f && !/^```/' "$DOC")
[[ -n $BLOCK ]] || die "no demo-s3 block in $DOC"
BLOCK=${BLOCK//\/tmp\/chainvol-s3/$WORK}
BLOCK=${BLOCK//127.0.0.1:7070/127.0.0.1:$PORT}
BLOCK=${BLOCK//\/127.0.0.1\/7070/\/127.0.0.1\/$PORT}

cd "$ROOT"
# The block's commands run in this shell (set -e: the first failure ends
# it), shown as they run; S3_PID, set by the block, is what cleanup stops.
PS4='+ '
set -x
eval "$BLOCK"
set +x
S3_PID=""
