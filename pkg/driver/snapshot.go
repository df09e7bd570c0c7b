package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// CreateSnapshot takes a reflink snapshot of a volume, with its filesystem
// frozen if it is staged here so the snapshot holds all that the
// application wrote; with parameter backup "true" the snapshot is then
// archived to a backup target (CSI spec "CreateSnapshot"). A local
// snapshot reports this node as its accessible topology, and a requisite
// topology that excludes this node is ResourceExhausted; a backup reports
// none and meets any requirement: it restores on every node
// (accessibility.go).
func (d *snapshotter) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_id are required")
	}
	sp, err := parseSnapshotParams(req.GetParameters())
	if err != nil {
		return nil, snapshotError("", err)
	}
	if !sp.Backup {
		if err := d.requireHere(req.GetAccessibilityRequirements(), "local snapshots"); err != nil {
			return nil, snapshotError("", err)
		}
	}
	unlock, err := lock(d.locks, snapshotNameLock(req.GetName()))
	if err != nil {
		return nil, snapshotError("", err)
	}
	defer unlock()
	if sp.Backup {
		return d.createBackupSnapshot(ctx, req, sp)
	}
	snap, err := d.localSnapshot(ctx, req.GetName(), req.GetSourceVolumeId(), volume.Record{})
	if err != nil {
		return nil, snapshotError("", err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: d.localCSISnapshot(snap)}, nil
}

// localSnapshot is volume.Manager.TakeSnapshot, its errors statuses.
func (d *snapshotter) localSnapshot(ctx context.Context, name, sourceID string, rec volume.Record) (backend.LVol, error) {
	snap, err := d.vols.TakeSnapshot(ctx, name, sourceID, rec)
	return snap, snapshotError("", err)
}

// csiSnapshot describes a snapshot lvol, without topology: a local
// snapshot adds its node's (localCSISnapshot), a backup has none.
func csiSnapshot(lv backend.LVol, ready bool) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: lv.ID, SourceVolumeId: lv.SourceID, SizeBytes: lv.SizeBytes,
		CreationTime: timestamppb.New(lv.CreatedAt), ReadyToUse: ready}
}

// DeleteSnapshot removes a local snapshot, or a backup from its chain
// (CSI spec "DeleteSnapshot": unknown ids are success).
func (d *snapshotter) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if err := d.deleteSnapshot(ctx, id, req.GetSecrets()); err != nil {
		return nil, snapshotError("", err)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// deleteSnapshot deletes snapshot id under its lock (locks.go): a backup
// from its chain with its name's record, a local snapshot lvol; an id
// that names nothing is already gone. DeleteSnapshot and
// DeleteVolumeGroupSnapshot share it. Errors are statuses.
func (d *core) deleteSnapshot(ctx context.Context, id string, secrets map[string]string) error {
	unlock, err := lock(d.locks, lvolLock(id))
	if err != nil {
		return err
	}
	defer unlock()
	if volume.IsBackupID(id) {
		if err := d.deleteBackupSnapshot(ctx, id, secrets); err != nil {
			return err
		}
		// The name's record after the backup: a crash between leaves a
		// record of no backup (a manifest lookup, then forgotten), never a
		// backup whose name is forgotten. The CO's retry removes it too.
		return snapshotError("", d.vols.ForgetBackup(id))
	}
	lv, err := d.pool.Get(ctx, id)
	if errors.Is(err, backend.ErrNotFound) || (err == nil && lv.Kind != backend.KindSnapshot) {
		return nil
	} else if err != nil {
		return snapshotError("look up snapshot", err)
	}
	if err := d.pool.Delete(ctx, id); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return snapshotError("delete snapshot", err)
	}
	klog.InfoS("snapshot deleted", "snapshot", id)
	return nil
}
