package driver

import (
	"context"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
)

func sortSnapshots(s []*csi.Snapshot) {
	sort.Slice(s, func(i, j int) bool { return s[i].SnapshotId < s[j].SnapshotId })
}

func isBackupID(id string) bool { return strings.HasPrefix(id, "backup:") }

func isBackupSnapshotSource(src *csi.VolumeContentSource) bool {
	return isBackupID(src.GetSnapshot().GetSnapshotId())
}

func (d *Driver) backupSnapshots(ctx context.Context) ([]*csi.Snapshot, error) { return nil, nil }

func (d *Driver) createBackupSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest, sp snapshotParams) (*csi.CreateSnapshotResponse, error) {
	return nil, status.Error(codes.Unimplemented, "backup snapshots are not implemented yet")
}

func (d *Driver) deleteBackupSnapshot(ctx context.Context, id string, secrets map[string]string) error {
	return nil
}

func (d *Driver) createRestoredVolume(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest) (*csi.CreateVolumeResponse, error) {
	return nil, status.Error(codes.Unimplemented, "restores are not implemented yet")
}

func (d *Driver) cancelRestore(lv backend.LVol) {}
