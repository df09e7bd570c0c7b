// Package blockdev reads what Linux tells in sysfs about block devices: a
// device's directory and number, its partitions, the loop devices backed
// by a file. A leaf shared by pkg/s3chain (is a restore destination in
// use?) and chainvolctl (is a backup source mounted read-write?).
package blockdev

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The sysfs trees read (Documentation/ABI/stable/sysfs-block).
const (
	sysBlock    = "/sys/block"
	sysDevBlock = "/sys/dev/block"
)

// Dir is the sysfs directory of block device dev: /sys/dev/block/MAJ:MIN.
func Dir(dev uint64) string {
	return filepath.Join(sysDevBlock, fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)))
}

// Number reads a sysfs "dev" attribute, MAJ:MIN. Errors: the read's, or
// a malformed value's.
func Number(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var maj, min uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d:%d", &maj, &min); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return unix.Mkdev(maj, min), nil
}

// Partitions returns the partitions of block device dev: device number to
// "/dev/NAME". None for a device without partitions or not in sysfs.
func Partitions(dev uint64) map[uint64]string {
	out := map[uint64]string{}
	parts, _ := filepath.Glob(filepath.Join(Dir(dev), "*", "partition"))
	for _, p := range parts {
		if num, err := Number(filepath.Join(filepath.Dir(p), "dev")); err == nil {
			out[num] = "/dev/" + filepath.Base(filepath.Dir(p))
		}
	}
	return out
}

// LoopsBackedBy returns the loop devices whose backing file is the file
// fi, whatever name it was attached under: device number to "/dev/loopN".
func LoopsBackedBy(fi os.FileInfo) map[uint64]string {
	out := map[uint64]string{}
	files, _ := filepath.Glob(filepath.Join(sysBlock, "loop*", "loop", "backing_file"))
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
		if num, err := Number(filepath.Join(dir, "dev")); err == nil {
			out[num] = "/dev/" + filepath.Base(dir)
		}
	}
	return out
}

// Rdev is the device number a device file fi stands for (0 for others).
func Rdev(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Rdev
	}
	return 0
}
