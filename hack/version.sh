#!/usr/bin/env bash
# version.sh: the one version of a build, printed on stdout. The Makefile
# stamps it into the binaries (-version, GetPluginInfo, chainvol_build_info),
# the image tag (with "+" as "_", which tags cannot hold), the chart's
# appVersion and the kustomize overlays make image writes (hack/imagedeploy):
#
#   v1.2.3                    at a release tag v*
#   v1.2.3-4-gabc1234[-dirty] after one (git describe)
#   0.0.0-dev+abc1234[-dirty] with no v* tag in the history (SemVer build
#                             metadata: a prerelease of nothing yet)
#   0.0.0-dev+unknown         outside a git checkout (a source tarball)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo 0.0.0-dev+unknown
elif ! git describe --tags --dirty --match 'v[0-9]*' 2>/dev/null; then
  echo "0.0.0-dev+$(git describe --always --dirty --abbrev=7)"
fi
