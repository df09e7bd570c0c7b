package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
)

// ListSnapshots lists local snapshots and the backups this driver made,
// filtered by snapshot id or source volume, paginated by id
// (CSI spec "ListSnapshots").
func (d *Driver) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	all, err := d.allSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	byID := map[string]*csi.Snapshot{}
	for _, s := range all {
		if req.GetSnapshotId() != "" && s.SnapshotId != req.GetSnapshotId() {
			continue
		}
		if req.GetSourceVolumeId() != "" && s.SourceVolumeId != req.GetSourceVolumeId() {
			continue
		}
		ids = append(ids, s.SnapshotId)
		byID[s.SnapshotId] = s
	}
	start, end, next, err := page(ids, req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for _, id := range ids[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: byID[id]})
	}
	return resp, nil
}

// GetSnapshot describes one snapshot (CSI spec "GetSnapshot"); unknown ids
// are NotFound.
func (d *Driver) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	all, err := d.allSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range all {
		if s.SnapshotId == req.GetSnapshotId() {
			return &csi.GetSnapshotResponse{Snapshot: s}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "snapshot %q not found", req.GetSnapshotId())
}

// allSnapshots returns every visible snapshot sorted by id: local reflink
// snapshots and the backups this driver made.
func (d *Driver) allSnapshots(ctx context.Context) ([]*csi.Snapshot, error) {
	lvs, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, poolError("list snapshots", err)
	}
	var out []*csi.Snapshot
	for _, lv := range lvs {
		if lv.Labels[labelHidden] == "" {
			out = append(out, csiSnapshot(lv, true))
		}
	}
	backups, err := d.backupSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, backups...)
	sortSnapshots(out)
	return out, nil
}
