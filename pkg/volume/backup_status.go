package volume

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/retention"
)

// BackupStatus answers a retried CreateSnapshot of backup snapshot snap:
// ready once uploaded (reportedReady); not ready while uploading (the
// upload is restarted if no job runs, after a driver restart, and waited
// for until ctx's deadline); after a failed upload, the failure while the
// upload is retried under the same backup id, so that one snapshot name
// keeps one snapshot id forever (CSI spec "CreateSnapshot"); after a
// refused one (Final), the refusal, and no retry. It returns the snapshot
// lvol as last read and whether it is ready. Errors: uploadFailure,
// uploadRefusal, and the pool's, saying what was being read.
func (m *Manager) BackupStatus(ctx context.Context, snap backend.LVol, secrets map[string]string) (backend.LVol, bool, error) {
	ref, err := Of(snap).BackupRef.Ref()
	if err != nil {
		return snap, false, fmt.Errorf("backup snapshot: %w", err)
	}
	switch Of(snap).Upload {
	case Uploaded:
		m.ForgetJob(snap.ID)
		m.reportedReady(ctx, snap)
		return snap, true, nil
	case UploadFailed:
		return snap, false, m.retryUpload(ctx, snap, ref, secrets)
	case UploadRefused:
		return snap, false, uploadRefusal(snap)
	}
	j := m.StartUpload(snap, ref, secrets)
	if ok, err := j.Finished(); ok && errors.Is(err, context.Canceled) {
		// The driver is stopping (ErrStopping): the record still says
		// uploading, and the CO's retry after the restart resumes it.
		return snap, false, nil
	}
	if ok, _ := j.Finished(); ok || Wait(ctx, j) {
		if snap, err = m.pool.Get(ctx, snap.ID); err != nil {
			return snap, false, fmt.Errorf("backup snapshot: %w", err)
		}
		return m.BackupStatus(ctx, snap, secrets)
	}
	return snap, false, nil
}

// retryUpload restarts the failed upload of snap under its backup id and
// returns the failure for the CO to see meanwhile.
func (m *Manager) retryUpload(ctx context.Context, snap backend.LVol, ref backupid.Ref, secrets map[string]string) error {
	m.ForgetJob(snap.ID)
	if _, err := Update(ctx, m.pool, snap.ID, func(r *Record) { r.Upload = Uploading }); err != nil {
		return fmt.Errorf("restart backup upload: %w", err)
	}
	m.StartUpload(snap, ref, secrets)
	return uploadFailure(snap)
}

// uploadFailure is the answer about a failed upload: its cause, and that
// the upload is being retried under the same snapshot id. Its class is
// retryable whatever the cause, since the driver does retry:
// ClassUnreachable when the target could not be reached, ClassNoSpace when
// it is full, else ClassBusy (CSI spec "CreateSnapshot": an operation is
// pending for the snapshot; the CO retries with backoff).
func uploadFailure(snap backend.LVol) error {
	rec := Of(snap)
	c := ClassBusy
	if rec.UploadClass == ClassUnreachable || rec.UploadClass == ClassNoSpace {
		c = rec.UploadClass
	}
	return Refuse(c, "backup upload of %s failed: %s; retrying the upload under the same snapshot id",
		rec.BackupRef, rec.UploadError)
}

// uploadRefusal is the answer about an upload refused for good: its cause
// and that it is not retried, of class ClassTooLarge (FailedPrecondition
// for a volume its chain cannot hold: CSI spec "Error Scheme", the system
// is not in the state the operation needs, and no retry changes that) or
// ClassInvalid as recorded. The snapshot's lvol stays, so that the name
// keeps its answer, until DeleteSnapshot; no new one is taken for the
// volume while it does not fit (CheckChainFits).
func uploadRefusal(snap backend.LVol) error {
	rec := Of(snap)
	c := ClassTooLarge
	if rec.UploadClass == ClassInvalid {
		c = ClassInvalid
	}
	return Refuse(c, "backup upload of %s failed for good: %s; it is not retried: delete this snapshot",
		rec.BackupRef, rec.UploadError)
}

// reportedReady records that a CreateSnapshot answered ready for snap,
// which may let the sweep delete it. The name's record (written by Backup
// once the lvol is made) is written first if it is missing (a snapshot of
// an older driver, or a crash between the two), since once the sweep
// deleted the lvol it is all that remembers the name; group members are
// named by their group, not by a CSI snapshot name, and have none.
func (m *Manager) reportedReady(ctx context.Context, snap backend.LVol) {
	rec := Of(snap)
	if !rec.Unreported {
		return
	}
	if rec.GroupID == "" {
		if err := m.ensureBackupName(snap, nil); err != nil {
			klog.ErrorS(err, "record backup snapshot name", "snapshot", snap.ID)
			return // still unreported: the sweep keeps the lvol until a retry records it
		}
	}
	if _, err := Update(ctx, m.pool, snap.ID, func(r *Record) { r.Unreported = false }); errors.Is(err, backend.ErrNotFound) && rec.GroupID == "" {
		// Deleted meanwhile, only DeleteSnapshot deletes an unreported
		// snapshot: drop the record this call may have written after its
		// ForgetBackup.
		if err := m.ForgetBackup(rec.BackupRef.String()); err != nil {
			klog.ErrorS(err, "forget the name of a deleted backup", "backup", rec.BackupRef)
		}
		return
	} else if err != nil {
		klog.ErrorS(err, "record backup reported", "snapshot", snap.ID)
		return
	}
	m.SweepBases(ctx)
}

// ensureBackupName writes the record of backup snapshot snap's name, with
// retention policy p (nil: none), unless it names snap's backup already. A
// record rewritten by reportedReady (lost after a crash) has no policy: the
// backup is then kept, never dropped by a policy it may not have had.
func (m *Manager) ensureBackupName(snap backend.LVol, p *retention.Policy) error {
	rec := Of(snap)
	r, ok, err := m.LookupBackupName(snap.Name)
	if err != nil || ok && r.SnapshotID == rec.BackupRef.String() {
		return err
	}
	return m.RecordBackupName(BackupName{Name: snap.Name, SnapshotID: rec.BackupRef.String(), SourceVolumeID: snap.SourceID, Retention: p})
}
