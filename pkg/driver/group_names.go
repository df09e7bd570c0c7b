package driver

import (
	"context"
	"errors"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/volume"
)

// A group of backups is remembered by its name like a single backup
// (createBackupSnapshot, volume.BackupName): its members' lvols are swept
// like any base, and a retried CreateVolumeGroupSnapshot must still answer
// the same group (CSI spec "CreateVolumeGroupSnapshot").

// recordGroup writes the record of the backup group called name (its id,
// creation time as groupStatus answers it, and members) before its first
// answer, and before the sweep may delete a member (groupStatus clears
// Unreported); a group of local snapshots needs none. Errors: those of
// the state directory. p is the class's retention policy (nil: none),
// which the background gc applies to the group as a whole (retention.go).
func (d *groups) recordGroup(name string, members []backend.LVol, p *retention.Policy) error {
	first := volume.Of(members[0])
	if !first.IsBackup() {
		return nil
	}
	if r, ok, err := d.vols.LookupBackupGroup(name); err != nil || ok && r.GroupID == first.GroupID {
		return err
	}
	r := volume.BackupName{Name: name, GroupID: first.GroupID, CreatedAt: members[0].CreatedAt, Retention: p}
	for _, m := range members {
		r.Members = append(r.Members, volume.BackupName{SnapshotID: volume.Of(m).BackupRef.String(), SourceVolumeID: m.SourceID})
	}
	return d.vols.RecordBackupGroup(r)
}

// recordedGroup answers a CreateVolumeGroupSnapshot from the record of
// its name: the recorded group, each member from its local snapshot while
// there is one (backupStatus), else from its manifest on the target (the
// source volumes need not exist). It returns nil, nil when there is no
// record, or a member's backup no longer exists (the group is not whole:
// the record is forgotten). Errors: AlreadyExists when the name was
// recorded over other volumes; those of backupStatus and lookupBackup.
func (d *groups) recordedGroup(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest, ids []string) (*csi.VolumeGroupSnapshot, error) {
	r, ok, err := d.vols.LookupBackupGroup(req.GetName())
	if err != nil || !ok {
		return nil, snapshotError("", err)
	}
	var sources []string
	for _, m := range r.Members {
		sources = append(sources, m.SourceVolumeID)
	}
	if slices.Sort(sources); !slices.Equal(sources, ids) {
		return nil, volume.Refuse(volume.ClassExists, "group snapshot %q exists for volumes %v, not %v", req.GetName(), sources, ids)
	}
	g := &csi.VolumeGroupSnapshot{GroupSnapshotId: r.GroupID, ReadyToUse: true, CreationTime: timestamppb.New(r.CreatedAt)}
	for _, m := range r.Members {
		s, err := d.memberStatus(ctx, m.SnapshotID, req.GetSecrets())
		if errors.Is(err, errNoSnapshot) {
			klog.InfoS("a member of a recorded backup group no longer exists", "name", r.Name, "group", r.GroupID, "backup", m.SnapshotID)
			return nil, snapshotError("", d.vols.ForgetBackup(m.SnapshotID))
		} else if err != nil {
			return nil, err
		}
		s.GroupSnapshotId = g.GroupSnapshotId
		g.ReadyToUse = g.ReadyToUse && s.GetReadyToUse()
		g.Snapshots = append(g.Snapshots, s)
	}
	return g, nil
}

// memberStatus describes the backup id of a group member: from its local
// snapshot while there is one, reporting (and restarting) its upload,
// else from its manifest. Errors: errNoSnapshot when the backup does not
// exist, those of backupStatus and lookupBackup.
func (d *groups) memberStatus(ctx context.Context, id string, secrets map[string]string) (*csi.Snapshot, error) {
	lv, err := d.vols.SnapshotOfBackup(ctx, id)
	if errors.Is(err, backend.ErrNotFound) {
		return d.lookupBackup(ctx, id, secrets)
	} else if err != nil {
		return nil, snapshotError("look up the local snapshot of "+id, err)
	}
	return d.backupStatus(ctx, lv, secrets)
}
