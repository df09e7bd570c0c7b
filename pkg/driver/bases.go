package driver

import (
	"context"
	"errors"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// reportedReady records that a CreateSnapshot answered ready for snap,
// which may let the sweep delete it. The name's record (written by
// createBackupSnapshot once the lvol is made) is written first if it is
// missing (a snapshot of an older driver, or a crash between the two),
// since once the sweep deleted the lvol it is all that remembers the name;
// group members are named by their group, not by a CSI snapshot name, and
// have none.
func (d *snapshotter) reportedReady(ctx context.Context, snap backend.LVol) {
	rec := volume.Of(snap)
	if !rec.Unreported {
		return
	}
	if rec.GroupID == "" {
		if err := d.ensureBackupName(snap); err != nil {
			klog.ErrorS(err, "record backup snapshot name", "snapshot", snap.ID)
			return // still unreported: the sweep keeps the lvol until a retry records it
		}
	}
	if _, err := volume.Update(ctx, d.pool, snap.ID, func(r *volume.Record) { r.Unreported = false }); errors.Is(err, backend.ErrNotFound) && rec.GroupID == "" {
		// Deleted meanwhile, only DeleteSnapshot deletes an unreported
		// snapshot: drop the record this call may have written after its
		// ForgetBackup.
		if err := d.vols.ForgetBackup(rec.BackupRef); err != nil {
			klog.ErrorS(err, "forget the name of a deleted backup", "backup", rec.BackupRef)
		}
		return
	} else if err != nil {
		klog.ErrorS(err, "record backup reported", "snapshot", snap.ID)
		return
	}
	d.vols.SweepBases(ctx)
}

// ensureBackupName writes the record of backup snapshot snap's name unless
// it names snap's backup already.
func (d *snapshotter) ensureBackupName(snap backend.LVol) error {
	rec := volume.Of(snap)
	r, ok, err := d.vols.LookupBackupName(snap.Name)
	if err != nil || ok && r.SnapshotID == rec.BackupRef {
		return err
	}
	return d.vols.RecordBackupName(volume.BackupName{Name: snap.Name, SnapshotID: rec.BackupRef, SourceVolumeID: snap.SourceID})
}
