# storage/images.sh: the images Kubernetes' storage e2e suite runs, made
# locally (this machine reaches no registry) and imported under the exact
# names test/utils/image/manifest.go of k8s.io/kubernetes v1.37.2 asks for,
# so no KUBE_TEST_REPO_LIST is needed and no pod pulls (IfNotPresent finds
# them). Needs lib/common.sh and lib/images.sh (make_image, bin_layer,
# rootfs_layer) and the cluster's containerd.

E2E_BUSYBOX=registry.k8s.io/e2e-test-images/busybox:1.37.0-2
E2E_AGNHOST=registry.k8s.io/e2e-test-images/agnhost:2.66.1
E2E_NGINX=registry.k8s.io/e2e-test-images/nginx:1.27.0-2
E2E_PAUSE=registry.k8s.io/pause:3.10.2
E2E_GLIBC=registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1

# busybox_layer OUT: Debian's static busybox at /bin/busybox with a link for
# each of its applets (busybox --list-full), and the few files the
# busybox image has besides (root and nobody, a sticky /tmp).
busybox_layer() {
  local d; d=$(mktemp -d "$CACHE/layer.XXXXXX")
  mkdir -p "$d/bin" "$d/sbin" "$d/usr/bin" "$d/usr/sbin" "$d/etc" "$d/root" "$d/tmp" "$d/var" "$d/home"
  chmod 1777 "$d/tmp"
  cp "$BIN/busybox" "$d/bin/busybox"
  local a
  for a in $("$BIN/busybox" --list-full); do
    [[ $a == bin/busybox || -e $d/$a ]] || ln -s /bin/busybox "$d/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' > "$d/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' > "$d/etc/group"
  layer_from_dir "$d" "$1"
  rm -rf "$d"
}

# e2e_images: busybox (also standing in for nginx: the suite only runs
# shell commands in it), agnhost (the Go binary at /agnhost over the
# Debian base the driver's image uses: hostexec pods need nsenter and sh;
# storage/nsenter-hostexec.sh stands in front of nsenter, see there),
# glibc-dns-testing (a Debian image upstream: the multiVolume specs run
# sh, dd and md5sum in it; here the same Debian base) and the pause image.
e2e_images() {
  local L=$CACHE/layers
  mkdir -p "$L"
  busybox_layer "$L/busybox-e2e.tar"
  make_image "$E2E_BUSYBOX" '["/bin/sh"]' "$L/busybox-e2e.tar"
  make_image "$E2E_NGINX" '["/bin/sh"]' "$L/busybox-e2e.tar"
  local d; d=$(mktemp -d "$CACHE/layer.XXXXXX")
  cp "$BIN/agnhost" "$d/agnhost"
  mkdir -p "$d/usr/local/sbin"
  cp "$HERE/storage/nsenter-hostexec.sh" "$d/usr/local/sbin/nsenter"
  layer_from_dir "$d" "$L/agnhost.tar"
  rm -rf "$d"
  make_image "$E2E_AGNHOST" '["/agnhost"]' "$(rootfs_layer)" "$L/agnhost.tar"
  make_image "$E2E_GLIBC" '["/bin/sh"]' "$(rootfs_layer)"
  make_image "$E2E_PAUSE" '["/usr/local/bin/pause"]' "$L/pause.tar"
}
