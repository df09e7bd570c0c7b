# syntax=docker/dockerfile:1
# chainvol image: chainvol-csi (the node plugin, deploy/base/daemonset.yaml)
# and chainvolctl. Build with deploy/build-image.sh (make image); BuildKit is
# required for the cache mounts.

ARG GO_VERSION=1.26.8

# Build stage: both binaries, static (CGO off), so the runtime image needs
# no Go or libc beyond what Debian ships. The module and build caches persist
# across builds; go.mod/go.sum are copied first so a source change does not
# re-download modules.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG TARGETOS TARGETARCH
# VERSION and COMMIT as the Makefile sets them (git describe, git rev-parse;
# deploy/build-image.sh passes both): pkg/version reports them.
ARG VERSION=devel COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X github.com/chainvol/chainvol/pkg/version.tag=${VERSION} -X github.com/chainvol/chainvol/pkg/version.commit=${COMMIT}" \
      -o /out/ ./cmd/chainvol-csi ./cmd/chainvolctl ./cmd/chainvol-populator

# Runtime: what the node plugin executes and nothing else. `make image`
# builds the same image without an engine (hack/image-base.sh: debootstrap
# of these packages; hack/image: the binaries, entrypoint and labels);
# deploy/image_test.go keeps the two package lists equal.
#   mount       mount, umount, losetup
#   util-linux  blkid, fsck
#   e2fsprogs   mkfs.ext4, resize2fs, fsck.ext4
#   xfsprogs    mkfs.xfs, xfs_growfs, xfs_admin, xfs_logprint, fsck.xfs
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      mount util-linux e2fsprogs xfsprogs \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/* \
 && for tool in mount umount losetup blkid mkfs.ext4 mkfs.xfs resize2fs xfs_growfs xfs_admin xfs_logprint fsck; do \
      command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }; \
    done \
 && useradd --system --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin chainvol
COPY --from=build /out/chainvol-csi /out/chainvolctl /out/chainvol-populator /usr/local/bin/
ARG VERSION=devel COMMIT=unknown
LABEL org.opencontainers.image.title="chainvol-csi" \
      org.opencontainers.image.source="https://github.com/chainvol/chainvol" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
# No USER: chainvol-csi runs as root because it attaches loop devices and
# mounts. chainvolctl needs no privileges; run it as the unprivileged user,
# e.g. `docker run --user chainvol --entrypoint chainvolctl IMAGE ...` or
# runAsUser: 65532 in a pod.
ENTRYPOINT ["/usr/local/bin/chainvol-csi"]
