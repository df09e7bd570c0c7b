package testutil

import (
	"testing"

	"golang.org/x/sys/unix"
)

// xfsIOCGoingDown and xfsNoLogFlush are XFS_IOC_GOINGDOWN (_IOR('X', 125,
// __u32)) and XFS_FSOP_GOING_FLAGS_NOLOGFLUSH, <xfs/xfs_fs.h>.
const (
	xfsIOCGoingDown = 0x8004587d
	xfsNoLogFlush   = 2
)

// PowerLoss shuts down the XFS mounted at mnt without writing its log, as
// xfstests emulates a power loss: later I/O fails with EIO and whatever
// was not yet made durable (log not forced by an fsync or sync) is lost
// once the filesystem is mounted again (Remount). Fails the test on error.
func PowerLoss(t testing.TB, mnt string) {
	t.Helper()
	fd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, xfsIOCGoingDown, xfsNoLogFlush); err != nil {
		t.Fatalf("XFS_IOC_GOINGDOWN: %v", err)
	}
}

// Remount unmounts the filesystem at mnt (every file on it must be
// closed) and mounts its device there again: after PowerLoss, XFS replays
// its log as after a reboot. Fails the test on error.
func Remount(t testing.TB, mnt string) {
	t.Helper()
	dev := Run(t, "findmnt", "-n", "-o", "SOURCE", "--target", mnt)
	Run(t, "umount", mnt)
	Run(t, "mount", dev, mnt)
}
