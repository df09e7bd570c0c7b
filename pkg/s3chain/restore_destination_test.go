package s3chain_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// blankImage creates a sparse file of size bytes.
func blankImage(t *testing.T, path string, size int64) string {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return path
}

// attachLoop attaches img to a free loop device, detached at the end.
func attachLoop(t *testing.T, img string) string {
	t.Helper()
	testutil.RequireRoot(t)
	dev := testutil.Run(t, "losetup", "--find", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev
}

// restoreOnto restores latest of c onto destination and wants
// ErrDestinationBusy with every one of words in the message, and destination's
// bytes unchanged.
func restoreOnto(t *testing.T, c *testChain, dest string, words ...string) {
	t.Helper()
	size := c.sizes[len(c.sizes)-1]
	before := fileSHA(t, dest, size)
	_, _, err := c.repo.Restore(context.Background(), s3chain.RestoreOptions{Chain: c.name, BackupID: "latest", Destination: dest})
	if !errors.Is(err, s3chain.ErrDestinationBusy) {
		t.Fatalf("restore onto %s in use: %v, want ErrDestinationBusy", dest, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("restore onto %s in use: %q does not name %q", dest, err, w)
		}
	}
	if after := fileSHA(t, dest, size); after != before {
		t.Errorf("restore onto %s in use changed its bytes", dest)
	}
}

// TestRestoreRefusesMountedDevice: a loop device with a mounted ext4 is
// refused, naming the mount point (issue 13 case 2: it was overwritten).
func TestRestoreRefusesMountedDevice(t *testing.T) {
	c := newTestChain(t, 0, nil)
	dev := attachLoop(t, blankImage(t, filepath.Join(c.dir, "disk.img"), c.sizes[0]))
	testutil.Run(t, "mkfs.ext4", "-q", "-F", dev)
	mnt := filepath.Join(c.dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "mount", dev, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	restoreOnto(t, c, dev, dev, mnt, "mounted")
}

// TestRestoreRefusesExclusiveOpener: a device another program opened
// with O_EXCL (as mkfs, swap or a mount do) is refused by the kernel.
func TestRestoreRefusesExclusiveOpener(t *testing.T) {
	c := newTestChain(t, 0, nil)
	dev := attachLoop(t, blankImage(t, filepath.Join(c.dir, "disk.img"), c.sizes[0]))
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	restoreOnto(t, c, dev, dev, "exclusively")
}

// TestRestoreRefusesLoopBackedFile: an image file attached to a loop
// device is refused, naming the device.
func TestRestoreRefusesLoopBackedFile(t *testing.T) {
	c := newTestChain(t, 0, nil)
	img := blankImage(t, filepath.Join(c.dir, "disk.img"), c.sizes[0])
	dev := attachLoop(t, img)
	restoreOnto(t, c, img, dev)
}

// TestResumeOntoOtherDisk: after an interrupted restore onto /dev/loopN,
// another blank image is attached at the same /dev/loopN; the rerun skips
// nothing and writes the backup's bytes (issue 13 case 1: 300 MiB were
// skipped on the new disk).
func TestResumeOntoOtherDisk(t *testing.T) {
	c := newTestChain(t, 2, nil)
	size := c.sizes[len(c.sizes)-1]
	dev := attachLoop(t, blankImage(t, filepath.Join(c.dir, "a.img"), size))
	o, _ := interrupted(t, c, dev, filepath.Join(c.dir, "loop.checkpoint"))
	st := resumeOnto(t, c, o, func() {
		testutil.Run(t, "losetup", "-d", dev)
		other := blankImage(t, filepath.Join(c.dir, "b.img"), size)
		testutil.Run(t, "losetup", dev, other)
	})
	if st.SkippedBlocks != 0 {
		t.Errorf("restore onto another disk at %s skipped %d blocks", dev, st.SkippedBlocks)
	}
}
