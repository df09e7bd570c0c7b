#!/usr/bin/env bash
# image-base.sh OUT.tar: the base filesystem of the chainvol image, made
# from Debian packages without a registry or a container engine:
# `debootstrap --variant=minbase` of Debian bookworm (the suite the
# Dockerfile's debian:bookworm-slim is) with the tools the node plugin
# executes, trimmed of docs and apt caches, packed as one reproducible tar
# layer. Cached: when OUT.tar exists it is kept (delete it to rebuild, e.g.
# for Debian security updates). Needs root (debootstrap chroots) and the
# debootstrap package (`make image` installs it).
#
#   mount       mount, umount, losetup
#   util-linux  blkid, fsck
#   e2fsprogs   mkfs.ext4, resize2fs, fsck.ext4
#   xfsprogs    mkfs.xfs, xfs_growfs, xfs_admin, xfs_logprint, fsck.xfs
#
# Environment: DEBIAN_MIRROR (default: the machine's own apt mirror, else
# http://deb.debian.org/debian), SUITE (default bookworm).
#
# OUT's directory (bin/image/ for `make image`) is created here: a fresh
# clone has no bin/ (issue 33: the log went to a directory that did not
# exist). hack/cleantree_test.go runs this script from a fresh clone with
# debootstrap and chroot faked.
set -euo pipefail

out=${1:?usage: image-base.sh OUT.tar}
[[ -f $out ]] && { echo "image-base: reusing $out"; exit 0; }
mkdir -p "$(dirname "$out")"
[[ $(id -u) == 0 ]] || { echo "image-base: debootstrap needs root to build $out" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "image-base: debootstrap is not installed (hack/apt-install.sh debootstrap)" >&2; exit 1; }

suite=${SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [[ -n $mirror ]] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

# Outside the repository: while debootstrap runs, its root has /proc
# mounted, and `go ... ./...` must not walk into it.
work=$(mktemp -d "${TMPDIR:-/var/tmp}/chainvol-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$out.debootstrap.log
echo "image-base: debootstrap $suite from $mirror (a few minutes; log in $log)"
debootstrap --variant=minbase --include=mount,util-linux,e2fsprogs,xfsprogs \
  "$suite" "$work/root" "$mirror" > "$log" 2>&1 || {
  echo "image-base: debootstrap failed; the last lines of $log:" >&2; tail -n 15 "$log" >&2; exit 1; }
for tool in mount umount losetup blkid fsck mkfs.ext4 resize2fs mkfs.xfs xfs_growfs xfs_admin xfs_logprint; do
  chroot "$work/root" sh -c "command -v $tool" >/dev/null || { echo "image-base: $tool missing in the rootfs" >&2; exit 1; }
done
# The unprivileged user of the Dockerfile, for running chainvolctl.
chroot "$work/root" useradd --system --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
  --shell /usr/sbin/nologin chainvol
# Dead weight in an image: docs, locales, apt's caches and lists, logs.
rm -rf "$work/root"/usr/share/{doc,man,locale,info} "$work/root"/var/cache/apt/* \
  "$work/root"/var/lib/apt/lists/* "$work/root"/var/log/* "$work/root"/dev/*
# Reproducible: sorted names, one mtime, numeric root ownership.
tar --sort=name --mtime=@0 --numeric-owner -C "$work/root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "image-base: wrote $out ($(du -h "$out" | cut -f1))"
