package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// createBackupSnapshot takes a reflink snapshot of the volume and uploads it
// in the background as the next link of the volume's chain: the story is
// volume.Manager.Backup's; the handler hands it the validated request, maps
// its error and answers. Until the upload is durable, the answer says
// ready_to_use false; retries with the same name report the same snapshot
// id, and a failed upload is the error of the next call while it is
// retried under that id.
func (d *snapshotter) createBackupSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest, sp snapshotParams) (*csi.CreateSnapshotResponse, error) {
	b, err := d.vols.Backup(ctx, volume.BackupRequest{Name: req.GetName(), SourceID: req.GetSourceVolumeId(),
		Target: sp.BackupTarget, BlockSize: sp.BlockSize, Secrets: req.GetSecrets(), Retention: sp.Retention})
	if err != nil {
		return nil, snapshotError("", err)
	}
	if b.Ready && sp.Retention != nil {
		d.scheduleRetention(ctx, b.ID, req.GetSecrets())
	}
	return &csi.CreateSnapshotResponse{Snapshot: backupSnapshot(b)}, nil
}

// backupStatus is the CSI snapshot of backup snapshot snap as
// volume.Manager.BackupStatus answers a retried call about it.
func (d *core) backupStatus(ctx context.Context, snap backend.LVol, secrets map[string]string) (*csi.Snapshot, error) {
	snap, ready, err := d.vols.BackupStatus(ctx, snap, secrets)
	if err != nil {
		return nil, snapshotError("", err)
	}
	return backupCSISnapshot(snap, ready), nil
}

// backupSnapshot describes a backup as a CSI snapshot: from its local
// snapshot, else from its manifest.
func backupSnapshot(b volume.Backup) *csi.Snapshot {
	if b.Local.ID != "" {
		return backupCSISnapshot(b.Local, b.Ready)
	}
	return manifestSnapshot(b.ID, b.Manifest)
}

// backupCSISnapshot describes a backup's snapshot lvol as a CSI snapshot.
func backupCSISnapshot(snap backend.LVol, ready bool) *csi.Snapshot {
	s := csiSnapshot(snap, ready)
	s.SnapshotId = volume.Of(snap).BackupRef.String()
	return s
}
