#!/bin/sh
# /usr/local/sbin/nsenter of the stand-in agnhost image (storage/images.sh).
# The suite's hostexec pods (k8s.io/kubernetes test/e2e/storage/utils
# host_exec.go) run `nsenter --mount=/rootfs/proc/1/ns/mnt -- sh -c CMD`
# to run CMD in the node's mount namespace, through the host's /proc at
# /rootfs/proc. On this machine pid 1 is the sandbox's own init, whose
# namespaces no one may open (Permission denied, root on the host too). The
# kubelet runs in the node's mount namespace, so that one is entered instead;
# any other call goes to the real nsenter unchanged.
if [ "$1" = --mount=/rootfs/proc/1/ns/mnt ] && ! /usr/bin/nsenter "$1" true 2>/dev/null; then
  for d in /rootfs/proc/[0-9]*; do
    if [ "$(cat "$d/comm" 2>/dev/null)" = kubelet ]; then
      shift
      exec /usr/bin/nsenter --mount="$d/ns/mnt" "$@"
    fi
  done
fi
exec /usr/bin/nsenter "$@"
