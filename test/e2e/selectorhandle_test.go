package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestSelectorHandles: the snapshot handles the volume populator writes
// (pkg/populator) name a selector, "backup:TARGET:CHAIN@before:T" or
// "@latest": ListSnapshots by that id (the csi-snapshotter's check of a
// pre-provisioned content) answers the backup the selector picks, ready,
// under that backup's concrete snapshot id,
// and an empty list when it picks none; DeleteSnapshot of a handle deletes
// nothing; CreateVolume from it restores that
// backup (restoredFrom names the concrete id).
func TestSelectorHandles(t *testing.T) {
	n, vol, p := startPVCVolume(t)
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
		if got := resp.GetEntries()[0].GetSnapshot().GetSnapshotId(); got != want {
			t.Errorf("ListSnapshots %s answers snapshot_id %q, want the concrete %q (not a moving selector)", handle, got, want)
		}
	}
	// Deleting a selector handle (a static content's Delete policy)
	// deletes nothing, never the backup it picks now.
	for _, handle := range []string{latest, before} {
		if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: handle}); err != nil {
			t.Errorf("DeleteSnapshot %s: %v, want OK (a selector names no backup to delete)", handle, err)
		}
	}
	for _, id := range []string{id1, id2} {
		if resp, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{SnapshotId: id}); err != nil || len(resp.GetEntries()) != 1 {
			t.Errorf("backup %s after deleting selector handles: %v, %v; want it kept", id, resp.GetEntries(), err)
		}
	}
	v := restore(t, n.Ctrl, restoreReq("pvc-0002", before, volSize, mountCap("ext4")))
	if got := v.GetVolumeContext()["restoredFrom"]; got != id1[len("backup:"):] {
		t.Errorf("restoredFrom %q, want %q (before:%s resolved by the driver)", got, id1[len("backup:"):], between)
	}
	// The same name with another backup is another volume: AlreadyExists,
	// never the first one answered for other content.
	_, err := n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("pvc-0002", id2, volSize, mountCap("ext4")))
	wantCode(t, "CreateVolume pvc-0002 again from another backup", err, codes.AlreadyExists, "")
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "restore from a before: handle", rp.Path, first)
	unpublishUnstage(t, rp)
}

// TestRestartMidRestoreLatestMoved: a restore from an "@latest" handle is
// killed (SIGKILL) mid-way, a new backup lands in the chain (latest
// moves), and the provisioner's retry to a new driver resumes THE SAME
// backup: the volume holds the first backup's exact bytes, restoredFrom
// names it, and a later retry answers that volume unchanged.
func TestRestartMidRestoreLatestMoved(t *testing.T) {
	const size = 256 * mib
	r := startRestartRig(t, "latest-src", size)
	first, proxy, vol, want := r.first, r.proxy, r.vol, r.want
	id1 := backup(t, first.Ctrl, vol.GetVolumeId(), "latest-b1", "")
	latest := id1[:strings.LastIndex(id1, "@")] + "@latest"

	proxy.setDelay(time.Second)
	req := restoreReq("latest-copy", latest, size, blockCap())
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err := first.Ctrl.CreateVolume(ctx, req)
	cancel()
	wantCode(t, "first CreateVolume of a slow restore", err, codes.Aborted, "progress")
	time.Sleep(1500 * time.Millisecond)
	first.kill()

	proxy.setDelay(0)
	second := r.restart(t)
	// Other bytes, backed up: "latest" now names them.
	sp := stagePublish(t, second.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, sp.Path, 10, []int64{0, 96 * mib, 160 * mib}, int(16*mib))
	moved := hashDevice(t, sp.Path)
	unpublishUnstage(t, sp)
	id2 := backup(t, second.Ctrl, vol.GetVolumeId(), "latest-b2", "")
	if id2 == id1 || moved == want {
		t.Fatalf("the second backup %s is not new bytes", id2)
	}
	for try := range 2 {
		v, err := createRestored(t, second.Ctrl, req, 20*time.Second)
		if err != nil {
			t.Fatalf("CreateVolume %d after the restart: %v", try, err)
		}
		if got := v.GetVolumeContext()["restoredFrom"]; got != id1[len("backup:"):] {
			t.Errorf("try %d: restoredFrom %q, want the first attempt's %q", try, got, id1[len("backup:"):])
		}
		rp := stagePublish(t, second.Node, v.GetVolumeId(), blockCap())
		if got := hashDevice(t, rp.Path); got != want {
			t.Fatalf("try %d: volume resumed across a restart after latest moved: sha256 %x, want the first backup's %x (latest's %x)", try, got, want, moved)
		}
		unpublishUnstage(t, rp)
	}
}
