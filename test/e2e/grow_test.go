package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestRestoreLarger: a backup restored into twice its size (embedded file
// target) is staged with its filesystem grown to the new size, data intact.
func TestRestoreLarger(t *testing.T) {
	testutil.RequireRoot(t)
	for _, fsType := range []string{"ext4", "xfs"} {
		t.Run(fsType, func(t *testing.T) {
			n := startDriver(t, "node-a", nil)
			vol := createVolume(t, n.Ctrl, "small-"+fsType, volSize, mountCap(fsType), nil)
			p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap(fsType))
			writeTree(t, p.Path, 6, 8*mib)
			want := hashTree(t, p.Path)
			srcTotal := fsTotal(t, n, vol.GetVolumeId(), p.Path)
			id := backup(t, n.Ctrl, vol.GetVolumeId(), "small-"+fsType+"-b1", "")
			unpublishUnstage(t, p)

			v := restore(t, n.Ctrl, restoreReq("big-"+fsType, id, 2*volSize, mountCap("")))
			if v.GetCapacityBytes() < 2*volSize {
				t.Errorf("restored capacity %d, want at least %d", v.GetCapacityBytes(), 2*volSize)
			}
			rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap(""))
			got := fsTotal(t, n, v.GetVolumeId(), rp.Path)
			t.Logf("filesystem size %d B before, %d B after restoring into %d B", srcTotal, got, 2*volSize)
			if float64(got) < 1.9*float64(srcTotal) || got > 2*volSize {
				t.Errorf("restored filesystem has %d bytes, want about twice the source's %d", got, srcTotal)
			}
			sameTree(t, "grown restore", rp.Path, want)
			unpublishUnstage(t, rp)
		})
	}
}

// fsTotal returns the total bytes NodeGetVolumeStats reports for a
// published filesystem volume.
func fsTotal(t *testing.T, n *csitest.Node, volID, path string) int64 {
	t.Helper()
	resp, err := n.Node.NodeGetVolumeStats(rpcCtx(t), &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: path})
	if err != nil {
		t.Fatalf("NodeGetVolumeStats %s: %v", volID, err)
	}
	for _, u := range resp.GetUsage() {
		if u.GetUnit() == csi.VolumeUsage_BYTES {
			return u.GetTotal()
		}
	}
	t.Fatalf("NodeGetVolumeStats %s: no BYTES usage in %v", volID, resp)
	return 0
}
