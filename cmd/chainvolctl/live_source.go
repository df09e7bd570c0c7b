package main

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"

	"github.com/chainvol/chainvol/internal/blockdev"
)

// mountInfoFile is where backup create looks for the mounts of its source.
const mountInfoFile = "/proc/self/mountinfo"

// liveMount is a read-write mount of a backup source's filesystem.
type liveMount struct {
	device     string // the block device mounted: the source or a loop device backed by it
	mountPoint string
}

// findLiveMounts returns the read-write mounts, one per filesystem, of
// the filesystems on from: a block device or its partitions, or an image
// file through the loop devices backed by it (and their partitions). None
// when it is unmounted, mounted read-only only, or not a filesystem's
// device in this mount namespace. A read-write filesystem keeps changing
// its device (journal, superblock, data in flight), so a copy is torn.
func findLiveMounts(from string) ([]liveMount, error) {
	fi, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	devs := map[uint64]string{}
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		devs[blockdev.Rdev(fi)] = from
	case fi.Mode().IsRegular():
		devs = blockdev.LoopsBackedBy(fi)
	}
	for dev := range maps.Clone(devs) {
		maps.Copy(devs, blockdev.Partitions(dev))
	}
	if len(devs) == 0 {
		return nil, nil
	}
	infos, err := mount.ParseMountInfo(mountInfoFile)
	if err != nil {
		return nil, fmt.Errorf("read mounts to check that %s is not in use: %w", from, err)
	}
	var out []liveMount
	seen := map[uint64]bool{}
	for _, mi := range infos {
		num := unix.Mkdev(uint32(mi.Major), uint32(mi.Minor))
		if dev, ok := devs[num]; ok && !seen[num] && slices.Contains(mi.MountOptions, "rw") {
			seen[num] = true // one mount is enough: a freeze applies to the filesystem
			out = append(out, liveMount{device: dev, mountPoint: mi.MountPoint})
		}
	}
	return out, nil
}
