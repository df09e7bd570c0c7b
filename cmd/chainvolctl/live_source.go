package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// Where backup create looks for the mounts of its source; variables so
// that tests can point them elsewhere.
var (
	mountInfoFile  = "/proc/self/mountinfo"
	sysBlockDir    = "/sys/block"
	sysDevBlockDir = "/sys/dev/block"
)

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
		devs[rdevOf(fi)] = from
	case fi.Mode().IsRegular():
		devs = loopsBackedBy(fi)
	}
	for dev := range maps.Clone(devs) {
		maps.Copy(devs, partitionsOf(dev))
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

// partitionsOf returns the device numbers (and names) of the partitions
// of block device dev.
func partitionsOf(dev uint64) map[uint64]string {
	out := map[uint64]string{}
	dir := filepath.Join(sysDevBlockDir, fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)))
	parts, _ := filepath.Glob(filepath.Join(dir, "*", "partition"))
	for _, p := range parts {
		if num, ok := readDevNumber(filepath.Join(filepath.Dir(p), "dev")); ok {
			out[num] = "/dev/" + filepath.Base(filepath.Dir(p))
		}
	}
	return out
}

// readDevNumber parses a sysfs "dev" attribute, MAJ:MIN.
func readDevNumber(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var maj, min uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d:%d", &maj, &min); err != nil {
		return 0, false
	}
	return unix.Mkdev(maj, min), true
}

// loopsBackedBy returns the device numbers (and names) of the loop devices
// whose backing file is the file fi, whatever name it was attached under.
func loopsBackedBy(fi os.FileInfo) map[uint64]string {
	out := map[uint64]string{}
	files, _ := filepath.Glob(filepath.Join(sysBlockDir, "loop*", "loop", "backing_file"))
	for _, bf := range files {
		data, err := os.ReadFile(bf)
		if err != nil {
			continue
		}
		bfi, err := os.Stat(strings.TrimSpace(string(data)))
		if err != nil || !os.SameFile(fi, bfi) {
			continue
		}
		dir := filepath.Dir(filepath.Dir(bf))
		if num, ok := readDevNumber(filepath.Join(dir, "dev")); ok {
			out[num] = "/dev/" + filepath.Base(dir)
		}
	}
	return out
}

func rdevOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Rdev
	}
	return 0
}
