package main

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/mount-utils"
)

// checkMountDir wants dir to be an existing empty directory that is not a
// mount point. A mount left by a killed "backup mount" is named as such,
// with the commands that undo it (the ones its --help gives).
func checkMountDir(dir string) error {
	if _, err := os.Stat(dir); mount.IsCorruptedMnt(err) {
		return usagef("%s is still mounted by a \"backup mount\" that ended without unmounting (its FUSE server is gone: %v); undo it with: umount %s", dir, err, dir)
	}
	if notMnt, err := mount.New("").IsLikelyNotMountPoint(dir); err == nil && !notMnt {
		return usagef("%s is still mounted (by a \"backup mount\" that was killed?); undo it with: %s", dir, undoMount(dir))
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return usagef("mount directory: %v (it must be an existing empty directory)", err)
	}
	if len(ents) > 0 {
		return usagef("mount directory %s is not empty", dir)
	}
	return nil
}

// undoMount returns the commands that undo the mount at dir: umount, and
// when its device is a loop device over a lazy image, losetup -d of it and
// umount of the image's FUSE directory (read from /sys).
func undoMount(dir string) string {
	cmds := "umount " + dir
	abs, _ := filepath.Abs(dir)
	mps, err := mount.New("").List()
	if err != nil {
		return cmds
	}
	for _, mp := range mps {
		if mp.Path != abs || !strings.HasPrefix(mp.Device, "/dev/loop") {
			continue
		}
		cmds += "; losetup -d " + mp.Device
		b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(mp.Device), "loop", "backing_file"))
		if img := strings.TrimSpace(string(b)); err == nil && filepath.Base(img) == "image" {
			cmds += "; umount " + filepath.Dir(img)
		}
	}
	return cmds
}
