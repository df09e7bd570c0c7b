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
  echo "$out" >> "$RUN/images.list"    # for a second node (lib/node_b.sh)
  log "image $name"
}

# rootfs_layer: the Debian base of the chainvol image (the tools the driver
# executes: mount, losetup, blkid, mkfs.*, resize2fs, xfs_*), as `make image`
# made and cached it (hack/image-base.sh); the tools image of the scenarios'
# pods is that base alone.
rootfs_layer() {
  local base=$REPO/bin/image/base-bookworm.tar
  [[ -f $base ]] || die "no $base: make image did not run"
  echo "$base"
}

# chainvol_image: import the image `make image` built (bin/image/last-build
# names its reference and tarball) into containerd, unchanged, and print
# its reference.
chainvol_image() {
  local ref tar
  read -r ref tar < "$REPO/bin/image/last-build" || die "no bin/image/last-build: make image did not run"
  ctr --address "$CTR_SOCK" -n k8s.io images import "$tar" >/dev/null || die "ctr import $tar failed"
  ctr --address "$CTR_SOCK" -n k8s.io images ls -q | grep -qxF "$ref" || die "$tar did not import as $ref"
  echo "$tar" >> "$RUN/images.list"
  log "image $ref (make image, $(du -h "$tar" | cut -f1))"
  echo "$ref"
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

# build_images: every image the cluster runs. The driver's is the one
# `make image` built this run (the code under test), imported as is; the
# rest are made here and cheap.
build_images() {
  local L=$CACHE/layers rootfs
  mkdir -p "$L"
  rootfs=$(rootfs_layer)
  bin_layer "$L/pause.tar" "$BIN/pause"
  make_image "$PAUSE_IMAGE" '["/usr/local/bin/pause"]' "$L/pause.tar"
  CHAINVOL_IMAGE=$(chainvol_image)
  echo "$CHAINVOL_IMAGE" > "$RUN/chainvol-image"
  make_image "$TOOLS_IMAGE" '["/bin/sh"]' "$rootfs"
  local img
  for img in csi-provisioner:v6.4.0 csi-snapshotter:v8.7.0 csi-resizer:v2.3.0; do
    bin_layer "$L/${img%%:*}.tar" "$BIN/${img%%:*}"
    make_image "registry.k8s.io/sig-storage/$img" "[\"/usr/local/bin/${img%%:*}\"]" "$L/${img%%:*}.tar"
  done
}
