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
)

// CreateSnapshot takes a reflink snapshot of a volume, with its filesystem
// frozen if it is staged here so the snapshot holds all that the
// application wrote; with parameter backup "true" the snapshot is then
// archived to a backup target (CSI spec "CreateSnapshot").
func (d *Driver) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_id are required")
	}
	sp, err := parseSnapshotParams(req.GetParameters())
	if err != nil {
		return nil, err
	}
	if !d.locks.tryLock("snap:" + req.GetName()) {
		return nil, errBusy(req.GetName())
	}
	defer d.locks.unlock("snap:" + req.GetName())
	if sp.Backup {
		return d.createBackupSnapshot(ctx, req, sp)
	}
	snap, err := d.localSnapshot(ctx, req.GetName(), req.GetSourceVolumeId(), nil)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(snap, true)}, nil
}

// localSnapshot returns the snapshot lvol called name of source, taking it
// (frozen) if it does not exist yet. The same name of another source is
// AlreadyExists; an unknown source is NotFound.
func (d *Driver) localSnapshot(ctx context.Context, name, sourceID string, labels map[string]string) (backend.LVol, error) {
	if snap, err := d.pool.GetByName(ctx, backend.KindSnapshot, name); err == nil {
		if snap.SourceID != sourceID {
			return snap, status.Errorf(codes.AlreadyExists, "snapshot %q exists for another volume (%s)", name, snap.SourceID)
		}
		return snap, nil
	}
	src, err := d.getVolume(ctx, sourceID)
	if err != nil {
		return src, err
	}
	if !d.locks.tryLock(src.ID) {
		return src, errBusy(src.ID)
	}
	defer d.locks.unlock(src.ID)
	thaw, err := d.freezeStaged(ctx, src.ID)
	if err != nil {
		return src, err // a status: Aborted while another freeze holds it
	}
	snap, err := d.pool.Create(ctx, backend.CreateOptions{Name: name, Kind: backend.KindSnapshot, SourceID: src.ID,
		SizeBytes: src.SizeBytes, Labels: snapshotLabels(src, labels)})
	thaw()
	if err != nil {
		return snap, poolError("snapshot lvol", err)
	}
	klog.InfoS("snapshot taken", "snapshot", snap.ID, "name", name, "source", src.ID)
	return snap, nil
}

// snapshotLabels carry the source's filesystem facts, so a volume created
// from the snapshot is never formatted.
func snapshotLabels(src backend.LVol, extra map[string]string) map[string]string {
	l := map[string]string{labelFSType: src.Labels[labelFSType], labelAccessType: src.Labels[labelAccessType],
		labelRestoredFrom: src.Labels[labelRestoredFrom]}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// csiSnapshot describes a snapshot lvol.
func csiSnapshot(lv backend.LVol, ready bool) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: lv.ID, SourceVolumeId: lv.SourceID, SizeBytes: lv.SizeBytes,
		CreationTime: timestamppb.New(lv.CreatedAt), ReadyToUse: ready}
}

// DeleteSnapshot removes a local snapshot, or a backup from its chain
// (CSI spec "DeleteSnapshot": unknown ids are success).
func (d *Driver) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if !d.locks.tryLock(id) {
		return nil, errBusy(id)
	}
	defer d.locks.unlock(id)
	if isBackupID(id) {
		return &csi.DeleteSnapshotResponse{}, d.deleteBackupSnapshot(ctx, id, req.GetSecrets())
	}
	lv, err := d.pool.Get(ctx, id)
	if errors.Is(err, backend.ErrNotFound) || (err == nil && lv.Kind != backend.KindSnapshot) {
		return &csi.DeleteSnapshotResponse{}, nil
	} else if err != nil {
		return nil, poolError("look up snapshot", err)
	}
	if err := d.pool.Delete(ctx, id); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, poolError("delete snapshot", err)
	}
	klog.InfoS("snapshot deleted", "snapshot", id)
	return &csi.DeleteSnapshotResponse{}, nil
}
