package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestLoopListBrokenNeighbour: a loop device whose backing file
// cannot be stat'ed by the kernel (here: on an XFS that shut down, whose
// getattr answers EIO; a dead FUSE file answers ENOTCONN alike) must not
// hide every other file's loop devices. losetup --associated, which list
// replaced, skips such a device (util-linux falls back to the name); list
// returned LOOP_GET_STATUS64's error for every file on the node (session 10).
func TestLoopListBrokenNeighbour(t *testing.T) {
	testutil.RequireRoot(t)
	mnt := testutil.LoopFS(t, "xfs", 512<<20)
	broken := filepath.Join(mnt, "broken.img")
	good := filepath.Join(t.TempDir(), "good.img")
	for _, f := range []string{broken, good} {
		mustOK(t, os.WriteFile(f, make([]byte, 1<<20), 0o600))
	}
	attach := func(f string) string {
		dev := testutil.Run(t, "losetup", "--find", "--show", f)
		t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
		return dev
	}
	attach(broken)
	g := attach(good)
	testutil.PowerLoss(t, mnt)

	ref := strings.Fields(testutil.Run(t, "losetup", "--noheadings", "--output", "NAME", "--associated", good))
	t.Logf("losetup --associated %s: %v", good, ref)
	got, err := (&loopDevices{}).list(context.Background(), good)
	if err != nil || !slices.Equal(got, []string{g}) {
		t.Fatalf("list(good) = %v, %v; want [%s] (losetup --associated: %v)", got, err, g, ref)
	}
}
