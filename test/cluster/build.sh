#!/usr/bin/env bash
# build.sh: build (or reuse) every binary the test cluster runs, into
# $CACHE/bin. Kubernetes comes from the scratch module next to this script
# (build/go.mod); the CSI sidecars and the snapshot controller from their own
# modules, built inside the downloaded module because their go.mod has replace
# lines that `go install pkg@version` refuses. A stamp file per component makes
# a warm run a no-op; the Go build cache makes even a rebuild quick.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"

K8S_VERSION=v1.37.2
PROVISIONER=github.com/kubernetes-csi/external-provisioner/v6@v6.4.0
SNAPSHOTTER=github.com/kubernetes-csi/external-snapshotter/v8@v8.7.0
RESIZER=github.com/kubernetes-csi/external-resizer/v2@v2.3.0
export CGO_ENABLED=0

# progress WHAT CMD...: run CMD and, instead of its per-module output,
# print one line a minute while it runs: the time so far and how much the Go
# module cache has grown. A cold run spends about 34 of its 42 minutes here
# (a fresh 2-core machine, issue 20), half of it downloading modules.
progress() {
  local what=$1; shift
  local cache t0=$SECONDS next=$((SECONDS + 60)) mb0 pid
  cache=$(go env GOMODCACHE)/cache/download
  mb0=$(du -sm "$cache" 2>/dev/null | cut -f1); mb0=${mb0:-0}
  "$@" & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if (( SECONDS >= next )); then
      local mb; mb=$(du -sm "$cache" 2>/dev/null | cut -f1)
      log "  ... $what: $(( (SECONDS - t0) / 60 )) min so far; Go module cache +$(( ${mb:-0} - mb0 )) MB"
      next=$((next + 60))
    fi
  done
  wait "$pid"
}

# download DIR: fetch every module the build in DIR needs, quietly (go
# build would print a "go: downloading" line per module, hundreds of them).
download() {
  (cd "$1" && GOFLAGS=-mod=mod go mod download)
}

# go_build DIR ARGS...: go build ARGS in DIR into $BIN, static and stripped.
go_build() {
  local dir=$1; shift
  (cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$BIN/" "$@")
}

build_k8s() {
  # Version stamps: the apiserver derives its emulation version from it, and
  # an unstamped v0.0.0 binary would refuse the 1.37 feature set.
  local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version ld=""
  for p in $v $cv; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
  done
  progress "download Kubernetes' modules" download "$HERE/build"
  progress "build Kubernetes" go_build "$HERE/build" -ldflags="-s -w $ld" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
}

# build_module MOD@VER CMD...: build ./cmd/CMD of a downloaded module, in
# a writable copy (the module cache is read-only and -mod=mod may need to
# complete go.sum). A replace pointing at a nested module (./client in
# external-snapshotter) is repointed at that module's published release,
# since module zips leave nested modules out.
build_module() {
  local modver=$1; shift
  local dir; dir=$(mod_dir "$modver")
  local src=$CACHE/src/${modver//[\/@]/_}
  rm -rf "$src" && mkdir -p "$CACHE/src" && cp -r "$dir" "$src" && chmod -R u+w "$src"
  local ver=${modver#*@} old
  for old in $(cd "$src" && go mod edit -json | jq -r '.Replace[]? | select(.New.Path | startswith("./")) | .Old.Path'); do
    (cd "$src" && go mod edit -replace="$old=$(mod_dir "$old@$ver")")
  done
  local pkgs=(); for c in "$@"; do pkgs+=("./cmd/$c"); done
  progress "download the modules of ${modver%@*}" download "$src"
  progress "build $*" go_build "$src" -ldflags="-s -w" "${pkgs[@]}"
}

# mod_dir MOD@VER: the module's directory in the module cache.
mod_dir() {
  local d; d=$(go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -n $d ]] || die "cannot download $1"
  echo "$d"
}

mkdir -p "$BIN" "$CACHE/logs"
stamped "k8s-$K8S_VERSION" build_k8s
stamped "provisioner-${PROVISIONER#*@}" build_module "$PROVISIONER" csi-provisioner
stamped "snapshotter-${SNAPSHOTTER#*@}" build_module "$SNAPSHOTTER" csi-snapshotter snapshot-controller
stamped "resizer-${RESIZER#*@}" build_module "$RESIZER" csi-resizer
stamped pause-1 sh -c "cd '$HERE/build' && go build -trimpath -ldflags='-s -w' -o '$BIN/pause' ./pause"
# The code under test: always rebuilt (seconds, from the Go build cache),
# with its image, exactly as a user builds it: `make image` (static binaries
# stamped with git describe, Debian base from debootstrap cached in bin/image,
# an OCI image tarball checked by running it). images.sh imports that tarball.
log "build chainvol and its image (make image)"
make -C "$REPO" --no-print-directory image
cp "$REPO/bin/chainvol-csi" "$REPO/bin/chainvolctl" "$BIN/"
