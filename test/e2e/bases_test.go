package e2e

import (
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
)

// TestDeleteVolumeDropsBases: DeleteVolume of a volume with backups leaves
// nothing of it in the pool: its hidden base snapshot goes at once, or,
// when the upload from it still runs, as soon as the upload is done; the
// backup stays restorable and the pool's free space comes back (issue 14,
// item 3).
func TestDeleteVolumeDropsBases(t *testing.T) {
	n, proxy := proxiedDriver(t)
	free := availableBytes(t, n)
	const size = 256 * mib

	a := createVolume(t, n.Ctrl, "bases-a", size, blockCap(), nil)
	writeVolume(t, n, a.GetVolumeId(), 1)
	backup(t, n.Ctrl, a.GetVolumeId(), "bases-a-b1", "")
	deleteVolume(t, n, a.GetVolumeId())
	poolEmpty(t, n, "after DeleteVolume of a volume with a finished backup")

	// The upload of b's backup is held at its first write while b is deleted.
	b := createVolume(t, n.Ctrl, "bases-b", size, blockCap(), nil)
	want := writeVolume(t, n, b.GetVolumeId(), 2)
	proxy.holdWrites()
	req := &csi.CreateSnapshotRequest{Name: "bases-b-b1", SourceVolumeId: b.GetVolumeId(), Parameters: backupParams("")}
	resp, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil || resp.GetSnapshot().GetReadyToUse() {
		t.Fatalf("CreateSnapshot with writes held: %v, %v; want not ready yet", resp, err)
	}
	proxy.waitHeld()
	deleteVolume(t, n, b.GetVolumeId())
	if lvols, _ := n.Pool.List(rpcCtx(t), ""); len(lvols) != 1 {
		t.Fatalf("pool holds %d lvols while the upload runs, want its snapshot only", len(lvols))
	}
	proxy.release()
	id := backupReq(t, n.Ctrl, req)
	if id != resp.GetSnapshot().GetSnapshotId() {
		t.Fatalf("snapshot id %s once ready, %s at first", id, resp.GetSnapshot().GetSnapshotId())
	}
	poolEmpty(t, n, "after the upload of a deleted volume's backup finished")
	if got := availableBytes(t, n); got < free-8*mib {
		t.Errorf("pool has %d bytes free, %d before: deleted volumes still hold space", got, free)
	}

	v := restore(t, n.Ctrl, restoreReq("bases-b-copy", id, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("backup of the deleted volume restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}

// writeVolume fills 8 MiB of a block volume (of 64 MiB or more) at two places and returns the
// volume's sha256.
func writeVolume(t *testing.T, n *csitest.Node, volID string, seed uint64) [32]byte {
	t.Helper()
	p := stagePublish(t, n.Node, volID, blockCap())
	writeDevice(t, p.Path, seed, []int64{0, 40 * mib}, int(4*mib))
	sum := hashDevice(t, p.Path)
	unpublishUnstage(t, p)
	return sum
}

func deleteVolume(t *testing.T, n *csitest.Node, id string) {
	t.Helper()
	if _, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume %s: %v", id, err)
	}
}

// poolEmpty waits (up to 10 s) until the pool holds no lvol at all.
func poolEmpty(t *testing.T, n *csitest.Node, when string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		lvols, err := n.Pool.List(rpcCtx(t), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(lvols) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, lv := range lvols {
				t.Logf("left: %s %s %q labels %v", lv.Kind, lv.ID, lv.Name, lv.Labels)
			}
			t.Fatalf("%s: the pool still holds %d lvols", when, len(lvols))
		}
	}
}

// availableBytes is the pool's free space as GetCapacity reports it.
func availableBytes(t *testing.T, n *csitest.Node) int64 {
	t.Helper()
	c, err := n.Ctrl.GetCapacity(rpcCtx(t), &csi.GetCapacityRequest{})
	if err != nil {
		t.Fatalf("GetCapacity: %v", err)
	}
	return c.GetAvailableCapacity()
}
