package lazy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/mount-utils"
)

// MountOptions returns the mount options that mount a filesystem of
// fsType read-only without replaying its journal or log, so that mounting
// writes nothing (the loop device refuses writes anyway) and reads only
// what the filesystem's own metadata needs: ext2/3/4 "noload"
// (ext4(5)), XFS "norecovery" (xfs(5): needs "ro") and "nouuid" (the
// source volume may be mounted on this host with the same UUID), btrfs
// "rescue=nologreplay" (btrfs(5)). Every filesystem also gets "nosuid",
// "nodev" and "noexec" (mount(8)): a backup holds what its volume's
// owner wrote, and a setuid-root binary or a device node in it must not
// become a way into this host for whoever can reach the mount.
func MountOptions(fsType string) []string {
	safe := []string{"ro", "nosuid", "nodev", "noexec"}
	switch fsType {
	case "ext2", "ext3", "ext4":
		return append(safe, "noload")
	case "xfs":
		return append(safe, "norecovery", "nouuid")
	case "btrfs":
		return append(safe, "rescue=nologreplay")
	default:
		return safe
	}
}

// Attach attaches file to a new read-only loop device (losetup
// --read-only: the kernel refuses every write to it) and returns its path.
// The sector size is the default 512 bytes, which every filesystem
// accepts. Errors: losetup's, with its output.
func Attach(ctx context.Context, file string) (string, error) {
	return losetup(ctx, "--read-only", file)
}

// AttachWritable attaches file (a ServeWritable image) to a new
// read-write loop device and returns its path; the loop device turns its
// filesystem's flushes into fsync(2) of file. Errors: losetup's.
func AttachWritable(ctx context.Context, file string) (string, error) {
	return losetup(ctx, "", file)
}

// losetup attaches file to a free loop device, with flag if not empty.
func losetup(ctx context.Context, flag, file string) (string, error) {
	args := []string{"--find", "--show"}
	if flag != "" {
		args = append(args, flag)
	}
	out, err := exec.CommandContext(ctx, "losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s %s: %v: %s", strings.Join(args, " "), file, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// Detach detaches loop device dev. Errors: losetup's, with its output.
func Detach(dev string) error {
	if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup --detach %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// unmountBusy retries unmount while it fails with EBUSY for up to 10 s:
// a loop device just detached may hold its file a little longer.
func unmountBusy(unmount func() error) error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = unmount(); err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
	}
}

// isMountPoint reports whether dir is a mount point (mount-utils'
// device comparison with its parent).
func isMountPoint(dir string) bool {
	notMnt, err := mount.New("").IsLikelyNotMountPoint(dir)
	return err == nil && !notMnt
}
