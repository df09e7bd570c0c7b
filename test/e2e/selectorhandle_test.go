package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestSelectorHandles: the snapshot handles the volume populator writes
// (pkg/populator) name a selector, "backup:TARGET:CHAIN@before:T" or
// "@latest": ListSnapshots by that id (the csi-snapshotter's check of a
// pre-provisioned content) answers the backup the selector picks, ready,
// and an empty list when it picks none; CreateVolume from it restores that
// backup (restoredFrom names the concrete id).
func TestSelectorHandles(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	vol := createVolume(t, n.Ctrl, "pvc-0001", volSize, mountCap("ext4"), pvcParams("shop", "data-db-0"))
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 1, 4*mib)
	first := hashTree(t, p.Path)
	id1 := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-1", "")
	time.Sleep(1100 * time.Millisecond)
	between := time.Now().UTC().Format(time.RFC3339)
	time.Sleep(1100 * time.Millisecond)
	writeTree(t, p.Path, 2, 4*mib)
	id2 := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-2", "")
	unpublishUnstage(t, p)

	chain := id1[:strings.LastIndex(id1, "@")]
	before, latest, early := chain+"@before:"+between, chain+"@latest", chain+"@before:2001-01-01T00:00:00Z"
	for handle, want := range map[string]string{before: id1, latest: id2, early: ""} {
		resp, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{SnapshotId: handle})
		if err != nil {
			t.Fatalf("ListSnapshots %s: %v", handle, err)
		}
		if want == "" {
			if len(resp.GetEntries()) != 0 {
				t.Errorf("ListSnapshots %s: %v, want none", handle, resp.GetEntries())
			}
			continue
		}
		if len(resp.GetEntries()) != 1 || !resp.GetEntries()[0].GetSnapshot().GetReadyToUse() || resp.GetEntries()[0].GetSnapshot().GetSizeBytes() == 0 {
			t.Fatalf("ListSnapshots %s: %v, want one ready backup", handle, resp.GetEntries())
		}
	}
	v := restore(t, n.Ctrl, restoreReq("pvc-0002", before, volSize, mountCap("ext4")))
	if got := v.GetVolumeContext()["restoredFrom"]; got != id1[len("backup:"):] {
		t.Errorf("restoredFrom %q, want %q (before:%s resolved by the driver)", got, id1[len("backup:"):], between)
	}
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "restore from a before: handle", rp.Path, first)
	unpublishUnstage(t, rp)
}
