package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// ListSnapshots lists local snapshots and the backups of every target
// (backupSnapshots), filtered by snapshot id or source volume, paginated by
// id (CSI spec "ListSnapshots"). A snapshot id is looked up directly, in
// its target with the request's secrets: one that names nothing is an
// empty list, one whose target or chain cannot be read is that error
// (PermissionDenied, Unavailable).
func (d *snapshotter) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	var all []*csi.Snapshot
	if id := req.GetSnapshotId(); id != "" {
		s, err := d.findSnapshot(ctx, id, req.GetSecrets())
		if err != nil && !errors.Is(err, errNoSnapshot) {
			return nil, snapshotError("", err)
		}
		if s != nil {
			all = append(all, s)
		}
	} else {
		var err error
		if all, err = d.allSnapshots(ctx, req.GetSecrets()); err != nil {
			return nil, snapshotError("", err)
		}
	}
	var ids []string
	byID := map[string]*csi.Snapshot{}
	for _, s := range all {
		if req.GetSourceVolumeId() == "" || s.SourceVolumeId == req.GetSourceVolumeId() {
			ids = append(ids, s.SnapshotId)
			byID[s.SnapshotId] = s
		}
	}
	entries, next, err := page(ids, req.GetMaxEntries(), req.GetStartingToken(), func(id string) *csi.ListSnapshotsResponse_Entry {
		return &csi.ListSnapshotsResponse_Entry{Snapshot: byID[id]}
	})
	if err != nil {
		return nil, snapshotError("", err)
	}
	return &csi.ListSnapshotsResponse{Entries: entries, NextToken: next}, nil
}

// GetSnapshot describes one snapshot (CSI spec "GetSnapshot"): a backup is
// read from its target with the request's secrets, whichever node or
// cluster made it. Unknown ids are NotFound; a target or chain that cannot
// be read is PermissionDenied, Unavailable, ... (familyCode).
func (d *snapshotter) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	s, err := d.findSnapshot(ctx, req.GetSnapshotId(), req.GetSecrets())
	if errors.Is(err, errNoSnapshot) {
		return nil, snapshotError("", volume.Refuse(volume.ClassNotFound, "snapshot %q not found", req.GetSnapshotId()))
	} else if err != nil {
		return nil, snapshotError("", err)
	}
	return &csi.GetSnapshotResponse{Snapshot: s}, nil
}

// findSnapshot looks up one visible snapshot by id: a local snapshot lvol
// (not a backup's hidden base) or a backup (lookupBackup). Errors:
// errNoSnapshot, or a status.
func (d *core) findSnapshot(ctx context.Context, id string, secrets map[string]string) (*csi.Snapshot, error) {
	if volume.IsBackupID(id) {
		return d.lookupBackup(ctx, id, secrets)
	}
	lv, err := d.pool.Get(ctx, id)
	if errors.Is(err, backend.ErrNotFound) || (err == nil && (lv.Kind != backend.KindSnapshot || volume.Of(lv).Hidden)) {
		return nil, errNoSnapshot
	} else if err != nil {
		return nil, snapshotError("look up snapshot", err)
	}
	return d.localCSISnapshot(lv), nil
}

// allSnapshots returns every visible snapshot sorted by id: local reflink
// snapshots and the backups of every target (backupSnapshots).
func (d *snapshotter) allSnapshots(ctx context.Context, secrets map[string]string) ([]*csi.Snapshot, error) {
	lvs, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, snapshotError("list snapshots", err)
	}
	var out []*csi.Snapshot
	for _, lv := range lvs {
		if !volume.Of(lv).Hidden {
			out = append(out, d.localCSISnapshot(lv))
		}
	}
	backups, err := d.backupSnapshots(ctx, secrets)
	if err != nil {
		return nil, err
	}
	out = append(out, backups...)
	sortSnapshots(out)
	return out, nil
}
