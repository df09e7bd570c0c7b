# images.sh: container images made by hand, without a registry or a Docker
# engine. Each image is an OCI layout tarball (plain tar layers, a config and
# a manifest, all addressed by sha256) imported with `ctr images import`; the
# names are the ones deploy/ refers to, so the DaemonSet runs unchanged.

# layer_from_dir DIR OUT: a reproducible tar layer of DIR's contents.
layer_from_dir() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf "$2" .
}

# blob FILE DIR: store FILE as a blob under DIR/blobs/sha256 and print its
# digest (the file's sha256) and size.
blob() {
  local sum size
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mkdir -p "$2/blobs/sha256"
  cp "$1" "$2/blobs/sha256/$sum"
  echo "sha256:$sum $size"
}

# make_image NAME ENTRYPOINT_JSON LAYER...: write NAME's OCI tarball to
# $CACHE/images and import it into containerd's k8s.io namespace.
make_image() {
  local name=$1 entry=$2; shift 2
  local dir; dir=$(mktemp -d "$CACHE/oci.XXXXXX")
  local layers="" diffs="" d s
  for l in "$@"; do
    read -r d s < <(blob "$l" "$dir")
    layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"$d\",\"size\":$s}"
    diffs+="${diffs:+,}\"$d\""    # uncompressed layers: digest == diff_id
  done
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$entry" "$diffs" > "$dir/config.json"
  read -r d s < <(blob "$dir/config.json" "$dir")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[%s]}' \
    "$d" "$s" "$layers" > "$dir/manifest.json"
  read -r d s < <(blob "$dir/manifest.json" "$dir")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$d" "$s" "$name" "${name##*:}" > "$dir/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$dir/oci-layout"
  rm "$dir/config.json" "$dir/manifest.json"
  local out="$CACHE/images/$(echo "$name" | tr '/:' '__').tar"
  mkdir -p "$CACHE/images"
  tar -C "$dir" -cf "$out" oci-layout index.json blobs
  rm -rf "$dir"
  ctr --address "$CTR_SOCK" -n k8s.io images import "$out" >/dev/null
  log "image $name"
}

# rootfs_layer: Debian's tools the driver executes (mount, losetup, blkid,
# mkfs.*, resize2fs, xfs_*), from debootstrap, cached as one layer.
rootfs_layer() {
  local out=$CACHE/layers/rootfs.tar
  [[ -f $out ]] && { echo "$out"; return; }
  local root=$CACHE/rootfs
  if [[ ! -d $root ]]; then
    local mirror; mirror=$(debian_mirror)
    rm -rf "$root.tmp" && mkdir -p "$CACHE/logs"
    debootstrap --variant=minbase --include=mount,util-linux,e2fsprogs,xfsprogs \
      bookworm "$root.tmp" "$mirror" > "$CACHE/logs/debootstrap.log" 2>&1 \
      || die "debootstrap failed, see $CACHE/logs/debootstrap.log"
    # Docs, locales and apt caches are dead weight in an image.
    rm -rf "$root.tmp"/var/cache/apt/archives/*.deb "$root.tmp"/usr/share/{doc,man,locale,info}
    mv "$root.tmp" "$root"
  fi
  mkdir -p "$CACHE/layers"
  layer_from_dir "$root" "$out.tmp" && mv "$out.tmp" "$out"
  echo "$out"
}

# debian_mirror: the machine's own Debian mirror, from its apt sources.
debian_mirror() {
  local m
  m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [[ -n $m ]] || m=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [[ -n $m ]] || die "no Debian mirror in the apt sources"
  echo "$m"
}

# bin_layer OUT BIN...: a layer with the given binaries in /usr/local/bin.
bin_layer() {
  local out=$1; shift
  local d; d=$(mktemp -d "$CACHE/layer.XXXXXX")
  mkdir -p "$d/usr/local/bin"
  cp "$@" "$d/usr/local/bin/"
  layer_from_dir "$d" "$out"
  rm -rf "$d"
}

# build_images: every image the cluster runs. The driver image is rebuilt
# each run (the binary is the code under test); the rest are cheap too.
build_images() {
  local L=$CACHE/layers rootfs
  mkdir -p "$L"
  rootfs=$(rootfs_layer)
  bin_layer "$L/pause.tar" "$BIN/pause"
  make_image "$PAUSE_IMAGE" '["/usr/local/bin/pause"]' "$L/pause.tar"
  bin_layer "$L/chainvol.tar" "$BIN/chainvol-csi" "$BIN/chainvolctl"
  make_image ghcr.io/chainvol/chainvol-csi:latest '["/usr/local/bin/chainvol-csi"]' "$rootfs" "$L/chainvol.tar"
  make_image "$TOOLS_IMAGE" '["/bin/sh"]' "$rootfs"
  local img
  for img in csi-provisioner:v6.4.0 csi-snapshotter:v8.7.0 csi-resizer:v2.3.0; do
    bin_layer "$L/${img%%:*}.tar" "$BIN/${img%%:*}"
    make_image "registry.k8s.io/sig-storage/$img" "[\"/usr/local/bin/${img%%:*}\"]" "$L/${img%%:*}.tar"
  done
}
