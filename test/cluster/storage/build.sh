#!/usr/bin/env bash
# storage/build.sh: what `make e2e-k8s-storage` needs on top of build.sh,
# into $CACHE/bin, each once (stamp files): Kubernetes' e2e.test and the
# ginkgo CLI (parallel runs) from the same module as the cluster
# (test/cluster/build: k8s.io/kubernetes v1.37.2), agnhost (the suite's
# helper image, Go code in that module), and Debian's busybox-static, the
# content of the suite's busybox image. Nothing is pulled from a registry.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
source "$HERE/lib/common.sh"

K8S_VERSION=v1.37.2
export CGO_ENABLED=0

# in_module CMD...: CMD in the cluster's Kubernetes module; -mod=mod lets go
# complete go.sum with the test-only dependencies of test/e2e.
in_module() { (cd "$HERE/build" && GOFLAGS=-mod=mod "$@"); }

# e2e.test, stamped with the version like the cluster's binaries (the suite
# logs it and compares it with the server's).
build_e2e_test() {
  local ld="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
  done
  in_module go test -c -trimpath -ldflags="-s -w $ld" -o "$BIN/e2e.test" k8s.io/kubernetes/test/e2e
}

# The ginkgo CLI at the version Kubernetes requires (it runs e2e.test in
# parallel processes and aggregates their reports).
build_ginkgo() {
  in_module go build -trimpath -ldflags="-s -w" -o "$BIN/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
}

build_agnhost() {
  in_module go build -trimpath -ldflags="-s -w" -o "$BIN/agnhost" k8s.io/kubernetes/test/images/agnhost
}

# busybox-static from Debian (apt-get download: no install, no root
# needed), unpacked; images.sh makes the busybox image of it.
fetch_busybox() {
  local d=$CACHE/busybox
  rm -rf "$d" && mkdir -p "$d/deb"
  chmod 777 "$d/deb"   # apt downloads as _apt when it can
  (cd "$d/deb" && apt-get download busybox-static >/dev/null)
  dpkg-deb -x "$d"/deb/busybox-static_*.deb "$d/root"
  cp "$d/root/bin/busybox" "$BIN/busybox"
  rm -rf "$d"
}

mkdir -p "$BIN"
stamped "e2e.test-$K8S_VERSION" build_e2e_test
stamped "ginkgo-$K8S_VERSION" build_ginkgo
stamped "agnhost-$K8S_VERSION" build_agnhost
stamped busybox-static fetch_busybox
