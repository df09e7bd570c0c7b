#!/usr/bin/env bash
# apt-install.sh [--no-install-recommends] PACKAGE...: install the Debian
# packages of this list that are missing, and change nothing else on the
# host that can be avoided:
#   - packages already installed are left at their version (only missing ones
#     are named, with --no-upgrade; apt may still upgrade a library a missing
#     package depends on, and says so);
#   - no service is started: a policy-rc.d answers 101 ("action forbidden")
#     during the install, as Debian's policy-rc.d interface defines, unless
#     the host has its own policy-rc.d, which is then obeyed;
#   - no service is left enabled at boot: every systemd unit the newly
#     installed packages ship (etcd.service, containerd.service, ...) is
#     disabled with systemctl;
#   - what was installed is printed, with the command that removes it;
#   - --no-install-recommends (passed to apt-get) leaves out what the
#     packages only recommend: chromium's recommends bring udev, avahi and
#     printing, none of which a headless test needs.
# Used by `make deps` and `make e2e-cluster`. Needs root when something is
# missing; prints nothing when nothing is.
set -euo pipefail

recommends=()
if [[ ${1:-} == --no-install-recommends ]]; then
  recommends=(--no-install-recommends)
  shift
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "$@"; do
  installed "$p" || missing+=("$p")
done
(( ${#missing[@]} )) || exit 0
[[ $(id -u) == 0 ]] || { echo "apt-install: missing ${missing[*]}; run as root to install them" >&2; exit 1; }

before=$(dpkg-query -W -f='${Package}\n' | sort)
policy=${POLICY_RC_D:-/usr/sbin/policy-rc.d}   # overridden by hack/aptinstall_test.go
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\n# written by chainvol hack/apt-install.sh for one install\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

echo "apt-install: installing the missing Debian packages: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade "${recommends[@]}" "${missing[@]}"

new=$(comm -13 <(echo "$before") <(dpkg-query -W -f='${Package}\n' | sort) | tr '\n' ' ')
units=()
for p in $new; do
  while read -r f; do
    units+=("$(basename "$f")")
  done < <(dpkg -L "$p" 2>/dev/null | grep -E '^(/usr)?/lib/systemd/system/[^/]+\.(service|socket|timer)$' || true)
done
if (( ${#units[@]} )) && command -v systemctl >/dev/null; then
  # Works without a running systemd too: it only removes the wants/ links.
  for u in "${units[@]}"; do
    systemctl disable --quiet "$u" 2>/dev/null || true
    if [[ $(systemctl is-enabled "$u" 2>/dev/null || true) == enabled ]]; then
      echo "apt-install: WARNING: $u is still enabled at boot; run: systemctl disable $u" >&2
    fi
  done
  echo "apt-install: not started, and not enabled at boot: ${units[*]}"
fi
echo "apt-install: installed $new"
echo "apt-install: to remove them: apt-get purge $new"
