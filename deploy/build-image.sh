#!/usr/bin/env bash
# Builds the chainvol image (Dockerfile at the repository root) with a
# Docker engine. Where no engine answers (`docker info` fails, or no docker
# CLI) it says so and exits 0, so `make image-docker` never fails CI on a machine
# without Docker.
#
# Without an engine, `make image` builds the same image (hack/image).
#
# Environment: IMAGE (default ghcr.io/chainvol/chainvol-csi:latest, the image
# deploy/base/daemonset.yaml runs), DOCKER (default docker), and any extra
# `docker build` arguments in DOCKER_BUILD_ARGS (e.g. "--platform linux/arm64").
set -euo pipefail

IMAGE="${IMAGE:-ghcr.io/chainvol/chainvol-csi:latest}"
DOCKER="${DOCKER:-docker}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v "$DOCKER" >/dev/null 2>&1; then
  echo "build-image: no Docker engine available ('$DOCKER' not found); skipping the image build of $IMAGE"
  exit 0
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "build-image: no Docker engine available ('$DOCKER info' failed); skipping the image build of $IMAGE"
  exit 0
fi

# BuildKit: the Dockerfile uses RUN --mount=type=cache.
# shellcheck disable=SC2086 # DOCKER_BUILD_ARGS is a list of words on purpose
# VERSION and COMMIT (set by `make image-docker`) go into pkg/version and
# the image's labels.
DOCKER_BUILDKIT=1 "$DOCKER" build ${DOCKER_BUILD_ARGS:-} -t "$IMAGE" -f "$root/Dockerfile" "$root" \
  --build-arg "VERSION=${VERSION:-devel}" --build-arg "COMMIT=${COMMIT:-unknown}"
echo "build-image: built $IMAGE"
