package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Focused regressions of what TestLifecycleInterleavings found; each names
// the seed that found it.

// TestBackupRetryAfterSweepSameID: a CreateSnapshot of a backup retried
// with the same name and parameters after it answered ready must answer
// the same snapshot id while that backup exists (CSI spec
// "CreateSnapshot": idempotent by name; the answer may have been lost to
// the sidecar's timeout or a restart). Found with seed 10: once a later
// backup of the chain is uploaded, the sweep deletes the first backup's
// local snapshot (superseded base), the only record of name → id, and the
// retry took a second backup with a new id; the first one stays on the
// target, an orphan no VolumeSnapshotContent names.
func TestBackupRetryAfterSweepSameID(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	vol := createVolume(t, n.Ctrl, "sweep-retry", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 5)
	req1 := &csi.CreateSnapshotRequest{Name: "sweep-retry-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	id1 := backupReq(t, n.Ctrl, req1)
	id2 := backup(t, n.Ctrl, vol.GetVolumeId(), "sweep-retry-b2", "") // supersedes b1's base
	if id2 == id1 {
		t.Fatalf("two backups answered one id %s", id1)
	}
	if got := backupReq(t, n.Ctrl, req1); got != id1 {
		t.Errorf("CreateSnapshot %s retried after ready: snapshot id %s, first %s", req1.Name, got, id1)
	}
}

// TestImageRecordsGoWithSnapshots: deleting every backup and volume leaves
// no image record in the state directory (images/). Found with seed 1:
// records were written for every uploaded backup snapshot and removed only
// lazily, by a later restore from a local base (restoreBase), so a node
// that takes backups and never restores kept one file per backup forever.
func TestImageRecordsGoWithSnapshots(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	vol := createVolume(t, n.Ctrl, "records", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 6)
	id1 := backup(t, n.Ctrl, vol.GetVolumeId(), "records-b1", "")
	id2 := backup(t, n.Ctrl, vol.GetVolumeId(), "records-b2", "")
	for _, id := range []string{id1, id2} {
		if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
			t.Fatalf("DeleteSnapshot %s: %v", id, err)
		}
	}
	deleteVolume(t, n, vol.GetVolumeId())
	poolEmpty(t, n, "after deleting the volume and its backups")
	if left, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "images", "*")); len(left) > 0 {
		t.Errorf("image records left after deleting every backup snapshot: %v", left)
	}
}

// TestBackupIDNotReused: a backup id, once answered, never names another
// backup, even after DeleteSnapshot removed the first: a stale reference
// (a VolumeSnapshotContent with deletionPolicy Retain, another cluster's
// pre-provisioned content, a fromBackup parameter, a CreateSnapshot retry
// in flight during the delete) would otherwise restore other data without
// an error. Found with seed 10: ids are the upload's second
// (20060102T150405Z) made unique only against the chain's manifests and
// this node's snapshots, so a backup taken in the same second as a deleted
// one got the deleted one's id.
func TestBackupIDNotReused(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	vol := createVolume(t, n.Ctrl, "reuse", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 7)
	for i := range 5 {
		id1 := backup(t, n.Ctrl, vol.GetVolumeId(), "reuse-a"+itoa(i), "")
		if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id1}); err != nil {
			t.Fatalf("DeleteSnapshot %s: %v", id1, err)
		}
		id2 := backup(t, n.Ctrl, vol.GetVolumeId(), "reuse-b"+itoa(i), "")
		if id2 == id1 {
			t.Fatalf("backup reuse-b%d answered the id %s of deleted backup reuse-a%d", i, id2, i)
		}
		if second(t, id1) == second(t, id2) {
			return // same second, told apart: the case this test is about
		}
	}
	t.Skip("no two backups fell in the same second; the machine is too slow for this test")
}

// second is the timestamp part (20060102T150405Z) of a backup snapshot id.
func second(t *testing.T, id string) string {
	r, err := volume.ParseBackupID(id)
	if err != nil || len(r.Backup) < 16 {
		t.Fatalf("backup id %q: %v", id, err)
	}
	return r.Backup[:16]
}

// TestCloneRetryAfterSourceDeleted: CreateVolume of a clone retried with
// the same name and parameters after its source snapshot or volume was
// deleted answers the clone (CSI spec "CreateVolume": a volume of that
// name compatible with the request is the answer). Found with seed 10: the
// source was resolved before the name was looked up, so the retry was
// NotFound and the provisioner never learnt the id of a volume that
// exists, which then nobody deletes.
func TestCloneRetryAfterSourceDeleted(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	src := createVolume(t, n.Ctrl, "clone-src", 64*mib, blockCap(), nil)
	snap, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "clone-src-s", SourceVolumeId: src.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	fromSnap := volReq("clone-of-snap", snapshotSource(snap.GetSnapshot().GetSnapshotId()), nil)
	fromVol := volReq("clone-of-vol", volumeSource(src.GetVolumeId()), nil)
	var ids []string
	for _, req := range []*csi.CreateVolumeRequest{fromSnap, fromVol} {
		resp, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
		if err != nil {
			t.Fatalf("CreateVolume %s: %v", req.Name, err)
		}
		ids = append(ids, resp.GetVolume().GetVolumeId())
	}
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	deleteVolume(t, n, src.GetVolumeId())
	for i, req := range []*csi.CreateVolumeRequest{fromSnap, fromVol} {
		resp, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
		if err != nil || resp.GetVolume().GetVolumeId() != ids[i] {
			t.Errorf("CreateVolume %s retried after its source was deleted: %v, %v; want volume %s", req.Name, resp.GetVolume().GetVolumeId(), err, ids[i])
		}
	}
}

// TestBackupRetryAfterVolumeDeletedSameID is TestBackupRetryAfterSweepSameID
// when the volume is deleted after the backup was ready: the sweep deletes
// the base ("its volume was deleted") and the retry was NotFound (the
// source volume), though the backup exists. Found with seed 12.
func TestBackupRetryAfterVolumeDeletedSameID(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	vol := createVolume(t, n.Ctrl, "gone-retry", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 8)
	req := &csi.CreateSnapshotRequest{Name: "gone-retry-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	id := backupReq(t, n.Ctrl, req)
	deleteVolume(t, n, vol.GetVolumeId())
	resp, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil || resp.GetSnapshot().GetSnapshotId() != id || !resp.GetSnapshot().GetReadyToUse() {
		t.Errorf("CreateSnapshot %s retried after ready and DeleteVolume: %v, %v; want %s ready", req.Name, resp.GetSnapshot(), err, id)
	}
}

// TestImageTempFilesCollected: the temporary files of an image record
// write (s3chain Image.WriteFile: CreateTemp ".image-*", then rename) that
// a crash interrupted are removed, as a started driver's state directory
// is otherwise left with them forever. Found with seed 412 (a SIGKILL
// mid-upload left images/.image-4274725594 after everything was deleted).
// The crash is simulated by creating such files before the driver starts.
func TestImageTempFilesCollected(t *testing.T) {
	testutil.RequireRoot(t)
	state := filepath.Join(t.TempDir(), "state")
	var stale []string
	for _, dir := range []string{"images", "restores"} {
		p := filepath.Join(state, dir, ".image-12345")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, p)
	}
	n := csitest.Start(t, "node-a", newPool(t), func(o *driver.Options) { o.StateDir, o.NoLocalBase = state, true }) // as seed 412
	vol := createVolume(t, n.Ctrl, "temps", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 9)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "temps-b1", "")
	restore(t, n.Ctrl, restoreReq("temps-copy", id, 64*mib, blockCap()))
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("temporary record file %s of an interrupted write still there", p)
		}
	}
}
