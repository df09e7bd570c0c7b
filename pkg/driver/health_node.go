package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// Health that sees failure (issue 25): the node probes what it made of a
// volume, its loop device and the filesystem mounted on it, the way a
// workload would meet a failure, by reading. Each probe is cheap (one
// direct 4 KiB read, one statfs and one directory read per path), so the
// kubelet's polling does not load a node.

// probeBytes is the size of the direct read of a volume's device: one
// sector of the 4096-byte sector size the loop devices are attached with.
const probeBytes = 4096

// nodeHealth returns the abnormal entries the node sees for the volume whose
// data file is file, staged at staging and published at publish (either
// may be ""): a loop device missing or no longer backing file, a device
// whose reads fail, and a filesystem that fails reads or turned read-only.
// None: healthy as far as the node can tell.
func (d *node) nodeHealth(ctx context.Context, id, file, staging, publish string) []*csi.VolumeHealth_VolumeHealthEntry {
	if staging == "" && publish == "" {
		return nil // not asked about this node's view
	}
	m := mountAtOrNil(staging)
	dev, entry := d.probeLoop(ctx, id, file, firstNonEmpty(staging, publish), m)
	if entry != nil {
		return []*csi.VolumeHealth_VolumeHealthEntry{entry}
	}
	var out []*csi.VolumeHealth_VolumeHealthEntry
	if err := probeDevice(dev); err != nil {
		out = append(out, healthEntry(csi.VolumeHealthErrorType_INACCESSIBLE, "DeviceIOError",
			fmt.Sprintf("reading the loop device %s of %s fails: %v", dev, id, err)))
	}
	for _, p := range []string{staging, publish} {
		if e := probeMount(id, p, dev, p == staging); e != nil && !hasReason(out, e.Reason) {
			out = append(out, e)
		}
	}
	return out
}

// probeLoop finds the volume's loop device: the one under the staging
// mount m, else the one backing file. It returns an entry when the device
// under the mount no longer backs file (detached, or switched to another
// file), or when no device backs file at all although the volume is in use
// at path.
func (d *node) probeLoop(ctx context.Context, id, file, path string, m *mount.MountInfo) (string, *csi.VolumeHealth_VolumeHealthEntry) {
	if m != nil {
		dev := deviceByNumber(m.Major, m.Minor)
		if ok, why := loopBacks(dev, file); !ok && loopBacking(dev) != d.vols.InstantFile(id) { // hydrating: over its image
			return "", healthEntry(csi.VolumeHealthErrorType_INACCESSIBLE, "LoopDeviceDetached",
				fmt.Sprintf("the device %s mounted at %s no longer backs %s's data file %s: %s; unstage and stage it again",
					m.Source, path, id, file, why))
		}
		return dev, nil
	}
	dev, err := d.deviceOf(ctx, id, file)
	if err == nil && dev == "" {
		return "", healthEntry(csi.VolumeHealthErrorType_INACCESSIBLE, "LoopDeviceMissing",
			fmt.Sprintf("no loop device backs %s although it is in use at %s; unstage and stage it again", id, path))
	}
	return dev, nil // err: losetup failed; nothing to say about the volume
}

// deviceByNumber returns the /dev path of block device major:minor from
// sysfs (the mount table's source is only what mount was given), "" when
// the kernel knows no such device.
func deviceByNumber(major, minor int) string {
	target, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if err != nil {
		return ""
	}
	return "/dev/" + filepath.Base(target)
}

// loopBacks reports whether the loop device dev is bound to file, by the
// device and inode numbers LOOP_GET_STATUS64 returns (a path could name
// a new file); when not, why says what dev is instead. A data file that
// cannot be stat'ed proves nothing about dev and counts as bound.
func loopBacks(dev, file string) (ok bool, why string) {
	if dev == "" {
		return false, "the device is gone"
	}
	info, err := loopStatus(dev)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return false, pe.Err.Error() // open failed
	case errors.Is(err, unix.ENXIO):
		return false, "it is no longer bound to any file (detached)"
	case errors.Is(err, unix.EIO):
		return true, "" // the loop driver stats its file, which fails: the other probes say so
	case err != nil:
		return false, fmt.Sprintf("it is not a loop device (%v)", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return true, "" // unknown: volumeHealth reports the file itself
	}
	if info.Device != st.Dev || info.Inode != st.Ino {
		return false, fmt.Sprintf("it backs %q", loopBacking(dev))
	}
	return true, ""
}

// probeDevice reads the first probeBytes of dev with O_DIRECT, past the
// page cache and, through the loop device's own direct I/O, down to the
// pool's data file. "" dev: nothing to probe.
func probeDevice(dev string) error {
	if dev == "" {
		return nil
	}
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// O_DIRECT wants an aligned buffer: an anonymous mapping is page aligned.
	buf, err := unix.Mmap(-1, 0, probeBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	_, err = unix.Pread(fd, buf, 0)
	return err
}

// probeMount checks the filesystem mounted at p on dev: statfs and a read of
// its root directory must succeed (a shut-down XFS answers EIO to the
// latter), and a filesystem the node mounted read-write must still be
// read-write (ext4's errors=remount-ro, or an operator's remount). staged
// says p is the staging mount, whose own mount flags count too; a publish
// bind mount may be read-only by request. Nothing mounted at p, or another
// device: nil (the CO may ask about a path it has not set up yet).
func probeMount(id, p, dev string, staged bool) *csi.VolumeHealth_VolumeHealthEntry {
	m := mountAtOrNil(p)
	if m == nil || dev == "" || !sameDevice(m, dev) {
		return nil
	}
	if err := probeFS(p); err != nil {
		return healthEntry(csi.VolumeHealthErrorType_INACCESSIBLE, "FilesystemIOError",
			fmt.Sprintf("the filesystem of %s at %s fails reads: %v (shut down after an I/O or metadata error?); unpublish, unstage and repair it", id, p, err))
	}
	devRO, err := loopReadOnly(dev)
	if err != nil || devRO {
		return nil // a reader-only volume is read-only by design
	}
	if slices.Contains(m.SuperOptions, "ro") || (staged && slices.Contains(m.MountOptions, "ro")) {
		return healthEntry(csi.VolumeHealthErrorType_DEGRADED, "FilesystemReadOnly",
			fmt.Sprintf("the filesystem of %s at %s was mounted read-write and is now read-only (remounted after errors?): writes fail", id, p))
	}
	return nil
}

// probeFS statfs's p and reads one entry of the directory.
func probeFS(p string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		return fmt.Errorf("statfs: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// sameDevice reports whether mount m is on the block device dev.
func sameDevice(m *mount.MountInfo, dev string) bool {
	rdev, err := deviceNumber(dev)
	return err == nil && onDevice(m, rdev)
}

// mountAtOrNil is mountAt for the probes: "" or an unreadable mount table
// is nil, as if nothing were mounted.
func mountAtOrNil(p string) *mount.MountInfo {
	if p == "" {
		return nil
	}
	m, err := mountAt(p)
	if err != nil {
		return nil
	}
	return m
}

// hasReason reports whether entries already carry reason (CSI spec
// "VolumeHealth": one entry per (status, reason)).
func hasReason(entries []*csi.VolumeHealth_VolumeHealthEntry, reason string) bool {
	return slices.ContainsFunc(entries, func(e *csi.VolumeHealth_VolumeHealthEntry) bool { return e.Reason == reason })
}
