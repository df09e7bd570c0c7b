package main

import (
	"fmt"
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
	mountInfoFile = "/proc/self/mountinfo"
	sysBlockDir   = "/sys/block"
)

// liveMount is a read-write mount of a backup source's filesystem.
type liveMount struct {
	device     string // the block device mounted: the source or a loop device backed by it
	mountPoint string
}

// findLiveMount returns a read-write mount of the filesystem on from (a
// block device, or an image file through a loop device backed by it), or
// nil when there is none in this mount namespace: a source that is
// unmounted, mounted read-only only, or not a filesystem's device. A
// read-write filesystem keeps changing its device (journal, superblock,
// data in flight), so a copy of it is torn.
func findLiveMount(from string) (*liveMount, error) {
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
	if len(devs) == 0 {
		return nil, nil
	}
	infos, err := mount.ParseMountInfo(mountInfoFile)
	if err != nil {
		return nil, fmt.Errorf("read mounts to check that %s is not in use: %w", from, err)
	}
	for _, mi := range infos {
		dev, ok := devs[unix.Mkdev(uint32(mi.Major), uint32(mi.Minor))]
		if ok && slices.Contains(mi.MountOptions, "rw") {
			return &liveMount{device: dev, mountPoint: mi.MountPoint}, nil
		}
	}
	return nil, nil
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
		var maj, min uint32
		if d, err := os.ReadFile(filepath.Join(dir, "dev")); err == nil {
			if _, err := fmt.Sscanf(strings.TrimSpace(string(d)), "%d:%d", &maj, &min); err == nil {
				out[unix.Mkdev(maj, min)] = "/dev/" + filepath.Base(dir)
			}
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
