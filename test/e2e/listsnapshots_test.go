package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestBackupsListedFromTargets: with the target's credentials only in the
// requests' secrets (as deploy/examples sets it up), GetSnapshot and
// ListSnapshots serve a backup from the target itself: after its volume
// and local base are gone, on another node that never saw it, and next to
// an encrypted chain the secrets cannot read, which hides nothing else. A
// lookup the secrets cannot read is PermissionDenied (issue 14, items 1-2).
func TestBackupsListedFromTargets(t *testing.T) {
	s3 := startS3(t)
	onlyTarget := func(o *driver.Options) { o.BackupTargets = []string{offsite + "=" + s3.url("")} }
	a := startDriver(t, "node-a", onlyTarget)
	secrets := map[string]string{"accessKeyID": s3.srv.AccessKey, "secretAccessKey": s3.srv.SecretKey}
	withKey := map[string]string{"encryptionKey": strings.Repeat("5a", 32)}
	for k, v := range secrets {
		withKey[k] = v
	}
	const size = 64 * mib
	vol := createVolume(t, a.Ctrl, "listed", size, blockCap(), nil)
	writeVolume(t, a, vol.GetVolumeId(), 11)
	id := backupReq(t, a.Ctrl, &csi.CreateSnapshotRequest{Name: "listed-b1", SourceVolumeId: vol.GetVolumeId(),
		Parameters: backupParams(""), Secrets: secrets})
	id2 := backupReq(t, a.Ctrl, &csi.CreateSnapshotRequest{Name: "listed-b2", SourceVolumeId: vol.GetVolumeId(),
		Parameters: backupParams(""), Secrets: secrets})
	enc := createVolume(t, a.Ctrl, "sealed", size, blockCap(), nil)
	encID := backupReq(t, a.Ctrl, &csi.CreateSnapshotRequest{Name: "sealed-b1", SourceVolumeId: enc.GetVolumeId(),
		Parameters: backupParams(""), Secrets: withKey})
	deleteVolume(t, a, vol.GetVolumeId())
	deleteVolume(t, a, enc.GetVolumeId())
	poolEmpty(t, a, "after deleting the backed-up volumes")

	b := startDriver(t, "node-b", onlyTarget)
	for _, n := range []*csitest.Node{a, b} {
		who := n.Opts.NodeID
		got, err := n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: id, Secrets: secrets})
		if err != nil {
			t.Fatalf("%s: GetSnapshot %s with the request's secrets: %v", who, id, err)
		}
		if s := got.GetSnapshot(); !s.GetReadyToUse() || s.GetSourceVolumeId() != vol.GetVolumeId() || s.GetSizeBytes() != size {
			t.Errorf("%s: GetSnapshot %s = %v, want ready, source %s, %d bytes", who, id, s, vol.GetVolumeId(), size)
		}
		_, err = n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: id})
		wantCode(t, who+": GetSnapshot without secrets", err, codes.PermissionDenied)
		_, err = n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: encID, Secrets: secrets})
		wantCode(t, who+": GetSnapshot of an encrypted backup without its key", err, codes.PermissionDenied, "encryptionKey")
		if _, err := n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: encID, Secrets: withKey}); err != nil {
			t.Errorf("%s: GetSnapshot of an encrypted backup with its key: %v", who, err)
		}
		_, err = n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: id + "9", Secrets: secrets})
		wantCode(t, who+": GetSnapshot of a backup that does not exist", err, codes.NotFound)

		one, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{SnapshotId: id, Secrets: secrets})
		if err != nil || len(one.GetEntries()) != 1 || one.GetEntries()[0].GetSnapshot().GetSnapshotId() != id {
			t.Errorf("%s: ListSnapshots{snapshot_id: %s} = %v, %v; want that backup", who, id, one.GetEntries(), err)
		}
		all, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{Secrets: secrets})
		if err != nil {
			t.Fatalf("%s: ListSnapshots: %v", who, err)
		}
		var ids []string
		for _, e := range all.GetEntries() {
			ids = append(ids, e.GetSnapshot().GetSnapshotId())
		}
		// In id order, the pagination order: two backups of one second
		// order by their ids' random part.
		want := []string{id, id2}
		slices.Sort(want)
		if strings.Join(ids, " ") != strings.Join(want, " ") {
			t.Errorf("%s: ListSnapshots with secrets that cannot read the encrypted chain = %v, want %v", who, ids, want)
		}
		page1, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{Secrets: secrets, MaxEntries: 1})
		if err != nil || len(page1.GetEntries()) != 1 || page1.GetNextToken() == "" {
			t.Fatalf("%s: ListSnapshots{max_entries: 1} = %v, %v", who, page1, err)
		}
		page2, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{Secrets: secrets, StartingToken: page1.GetNextToken()})
		if err != nil || len(page2.GetEntries()) != 1 || page2.GetEntries()[0].GetSnapshot().GetSnapshotId() != want[1] {
			t.Errorf("%s: second page = %v, %v; want %s", who, page2.GetEntries(), err, want[1])
		}
		sealed, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{Secrets: withKey})
		if err != nil || len(sealed.GetEntries()) != 1 || sealed.GetEntries()[0].GetSnapshot().GetSnapshotId() != encID {
			t.Errorf("%s: ListSnapshots with the encryption key = %v, %v; want %s", who, sealed.GetEntries(), err, encID)
		}
	}

	// A's own deletion shows in its next listing at once (the index is
	// dropped), although a listing is cached for up to 30 s.
	if _, err := a.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id2, Secrets: secrets}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", id2, err)
	}
	if all, err := a.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{Secrets: secrets}); err != nil ||
		len(all.GetEntries()) != 1 || all.GetEntries()[0].GetSnapshot().GetSnapshotId() != id {
		t.Errorf("ListSnapshots after deleting %s = %v, %v; want only %s", id2, all.GetEntries(), err, id)
	}

	// The pre-provisioned case: node b restores the backup by its handle.
	req := restoreReq("listed-copy", id, size, blockCap())
	req.Secrets = secrets
	restore(t, b.Ctrl, req)
}
