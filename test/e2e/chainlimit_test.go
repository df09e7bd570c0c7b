package e2e

import (
	"os"
	"time"

	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// A chain holds at most 1 Mi blocks of the block size its first backup
// fixed (FORMAT.md §1): these tests use 64 KiB blocks, so the limit is
// 64 GiB, reached with sparse lvols on a sparse pool (issue 24).
const (
	smallBlock   = 64 << 10
	chainLimit   = 1 << 20 * smallBlock // s3chain.MaxVolumeSize(smallBlock)
	chainLimitS  = "68719476736"
	pastTheLimit = chainLimit + smallBlock
)

// bigPoolDriver starts a driver on a pool whose (sparse) filesystem can
// hold an lvol past chainLimit; extra as startDriver's.
func bigPoolDriver(t *testing.T, extra func(*driver.Options)) *csitest.Node {
	t.Helper()
	testutil.RequireRoot(t)
	return csitest.Start(t, "node-a", filepath.Join(testutil.LoopFS(t, "xfs", chainLimit+16<<30), "pool"), extra)
}

// smallBlockBackup backs volID up as name with 64 KiB blocks, the first
// backup of its chain fixing that block size.
func smallBlockBackup(t *testing.T, n *csitest.Node, volID, name string) string {
	t.Helper()
	p := backupParams("")
	p["blockSize"] = "64Ki"
	return backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: volID, Parameters: p})
}

// TestExpandPastChainLimit: a volume with backups in a 64 KiB-block chain
// cannot grow past 64 GiB, in ControllerExpandVolume or in
// NodeExpandVolume (which grows the lvol when the controller ran on
// another node): OutOfRange naming the limit in bytes, the chain and a
// new chain as the way out, the lvol left as it was; growing to the limit
// itself is fine.
func TestExpandPastChainLimit(t *testing.T) {
	n := bigPoolDriver(t, nil)
	vol := createVolume(t, n.Ctrl, "grow", 16*mib, blockCap(), pvcParams("lab", "grow"))
	smallBlockBackup(t, n, vol.GetVolumeId(), "grow-b1")

	expand := func(size int64) (*csi.ControllerExpandVolumeResponse, error) {
		return n.Ctrl.ControllerExpandVolume(rpcCtx(t), &csi.ControllerExpandVolumeRequest{
			VolumeId: vol.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
	}
	_, err := expand(pastTheLimit)
	wantCode(t, "ControllerExpandVolume past the chain's limit", err, codes.OutOfRange, chainLimitS, "lab/grow", "new chain", "new claim")
	_, err = n.Node.NodeExpandVolume(rpcCtx(t), &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: "/unused",
		CapacityRange: &csi.CapacityRange{RequiredBytes: pastTheLimit}})
	wantCode(t, "NodeExpandVolume past the chain's limit", err, codes.OutOfRange, chainLimitS, "lab/grow")
	if lv, err := n.Pool.Get(rpcCtx(t), vol.GetVolumeId()); err != nil || lv.SizeBytes != 16*mib {
		t.Fatalf("after refused expansions the lvol has %d bytes (%v), want %d", lv.SizeBytes, err, 16*mib)
	}
	resp, err := expand(chainLimit)
	if err != nil || resp.GetCapacityBytes() != chainLimit {
		t.Fatalf("ControllerExpandVolume to the chain's limit: %v, %v", resp, err)
	}
}

// TestBackupPastChainLimit: a claim re-created under its old name with a
// size past its chain's limit (the chain is the claim's, its block size
// fixed at 64 KiB) gets no backup: CreateSnapshot answers
// FailedPrecondition naming the limit and the chain, before any snapshot
// lvol is taken, and answers the same on every retry, so that nothing is
// retried or piles up. A restore of the chain into a claim of that name
// past the limit is OutOfRange (its backups would continue the chain);
// into another claim, whose backups start its own chain, it is fine, and
// that chain's first backup asking blocks too small for the volume is
// InvalidArgument, before any snapshot.
func TestBackupPastChainLimit(t *testing.T) {
	n := bigPoolDriver(t, nil)
	old := createVolume(t, n.Ctrl, "db-old", 16*mib, blockCap(), pvcParams("lab", "db"))
	id := smallBlockBackup(t, n, old.GetVolumeId(), "db-b1")
	deleteVolume(t, n, old.GetVolumeId())

	vol := createVolume(t, n.Ctrl, "db-new", pastTheLimit, blockCap(), pvcParams("lab", "db"))
	req := &csi.CreateSnapshotRequest{Name: "db-b2", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	for i := range 3 {
		_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
		wantCode(t, "CreateSnapshot "+itoa(i)+" of a volume past its chain's limit", err, codes.FailedPrecondition, chainLimitS, "lab/db", "new chain")
	}
	if k := backupSnapshotsOf(t, n, vol.GetVolumeId()); len(k) != 0 {
		t.Errorf("refused backups left %d snapshot lvols", len(k))
	}

	r := restoreReq("db-again", id, pastTheLimit, blockCap())
	r.Parameters = pvcParams("lab", "db")
	_, err := createRestored(t, n.Ctrl, r, 10*time.Second)
	wantCode(t, "restore into the chain's own claim past its limit", err, codes.OutOfRange, chainLimitS, "lab/db")
	r = restoreReq("db-elsewhere", id, pastTheLimit, blockCap())
	r.Parameters = pvcParams("lab", "db-copy")
	v := restore(t, n.Ctrl, r)
	if v.GetCapacityBytes() < pastTheLimit {
		t.Errorf("restore into another claim: %d bytes, want %d", v.GetCapacityBytes(), pastTheLimit)
	}
	p := backupParams("")
	p["blockSize"] = "64Ki"
	_, err = n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "copy-b1", SourceVolumeId: v.GetVolumeId(), Parameters: p})
	wantCode(t, "first backup asking blocks too small for the volume", err, codes.InvalidArgument, chainLimitS, "larger block size")
	if k := backupSnapshotsOf(t, n, v.GetVolumeId()); len(k) != 0 {
		t.Errorf("a refused first backup left %d snapshot lvols", len(k))
	}
}

// backupSnapshotsOf lists the backup snapshot lvols of volume volID.
func backupSnapshotsOf(t *testing.T, n *csitest.Node, volID string) []volume.Record {
	t.Helper()
	snaps, err := n.Pool.List(rpcCtx(t), "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	var out []volume.Record
	for _, s := range snaps {
		if rec := volume.Of(s); s.SourceID == volID && rec.IsBackup() {
			out = append(out, rec)
		}
	}
	return out
}

// TestUploadRefusedForGood: when the chain turns out too small only as the
// upload runs (another writer created it with 64 KiB blocks after
// CreateSnapshot checked it; held at the proxy), the upload fails for good:
// recorded refused, never retried, and every later CreateSnapshot of the
// name answers FailedPrecondition with the limit and "not retried"; a new
// name is refused before any snapshot is taken, so the one refused snapshot
// stays the only one (until DeleteSnapshot, which removes it).
func TestUploadRefusedForGood(t *testing.T) {
	s3 := startS3(t)
	p := startFaultProxy(t, s3.srv.Endpoint)
	n := bigPoolDriver(t, s3.opts(s3.url(p.Addr)))
	vol := createVolume(t, n.Ctrl, "late", pastTheLimit, blockCap(), pvcParams("lab", "late"))

	p.holdWrites()
	req := &csi.CreateSnapshotRequest{Name: "late-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	first, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil || first.GetSnapshot().GetReadyToUse() {
		t.Fatalf("CreateSnapshot of a volume whose chain does not exist yet: %v, %v; want a backup not ready", first, err)
	}
	p.waitHeld()
	img := filepath.Join(t.TempDir(), "small.img")
	writeSparse(t, img, mib)
	other := openRepo(t, s3.url(""), s3.creds)
	if _, _, err := other.Backup(rpcCtx(t), s3chain.BackupOptions{Chain: "lab/late", Source: img, BlockSize: smallBlock}); err != nil {
		t.Fatalf("another writer's first backup of chain lab/late: %v", err)
	}
	p.release()

	for deadline := time.Now().Add(retryFor); ; time.Sleep(200 * time.Millisecond) {
		if _, err = n.Ctrl.CreateSnapshot(rpcCtx(t), req); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no CreateSnapshot reported the refused upload")
		}
	}
	for i := range 3 {
		wantCode(t, "CreateSnapshot "+itoa(i)+" after the refused upload", err, codes.FailedPrecondition,
			first.GetSnapshot().GetSnapshotId(), chainLimitS, "lab/late", "not retried")
		time.Sleep(300 * time.Millisecond) // a retry, had one started, would be running now
		_, err = n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	}
	recs := backupSnapshotsOf(t, n, vol.GetVolumeId())
	if len(recs) != 1 || recs[0].Upload != volume.UploadRefused {
		t.Fatalf("backup snapshots after the refused upload: %+v, want one refused", recs)
	}
	_, err = n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "late-b2", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")})
	wantCode(t, "CreateSnapshot of a new name", err, codes.FailedPrecondition, chainLimitS, "lab/late")
	if recs := backupSnapshotsOf(t, n, vol.GetVolumeId()); len(recs) != 1 {
		t.Errorf("a refused new backup left %d snapshot lvols, want the first one only", len(recs))
	}
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: first.GetSnapshot().GetSnapshotId()}); err != nil {
		t.Fatalf("DeleteSnapshot of the refused backup: %v", err)
	}
	if recs := backupSnapshotsOf(t, n, vol.GetVolumeId()); len(recs) != 0 {
		t.Errorf("DeleteSnapshot left %d snapshot lvols", len(recs))
	}
}

// writeSparse makes a sparse file of size bytes.
func writeSparse(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}
