package volume

import (
	"cmp"
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// StartUpload runs (or finds) the background upload of backup snapshot
// snap as backup ref (Upload), which records its outcome on snap
// (finishUpload). The secrets live only in the job's closure, never on
// disk.
func (m *Manager) StartUpload(snap backend.LVol, ref backupid.Ref, secrets map[string]string) *Job {
	h := UploadHooks{
		Open: func(ctx context.Context) (*s3chain.Repo, error) { return m.cfg.Targets.Open(ctx, ref.Target, secrets) },
		Started: func() func(s3chain.BackupStats, error) {
			if m.cfg.Observer == nil {
				return func(s3chain.BackupStats, error) {}
			}
			return m.cfg.Observer.BackupStarted(cmp.Or(ref.Target, m.cfg.Targets.Default()))
		},
	}
	return m.StartJob(snap.ID, "backup upload", func(ctx context.Context, j *Job) error {
		err := m.Upload(ctx, j, snap, ref, h)
		m.finishUpload(snap, ref, err)
		return err
	})
}

// finishUpload records an upload's outcome on its snapshot: done, or
// failed with the cause and its class for the next CreateSnapshot: refused
// when no retry can ever upload it (Final), else failed. A cancelled
// upload (driver stopping) stays "uploading" and restarts on the next
// call. A done snapshot is the chain's next FIEMAP base, so the sweep may
// now delete older ones (and this one, if its volume is gone).
func (m *Manager) finishUpload(snap backend.LVol, ref backupid.Ref, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	outcome := func(r *Record) {
		r.Upload, r.UploadError, r.UploadClass, r.UploadDoneAt = Uploaded, "", ClassNone, time.Now().UTC()
	}
	if err != nil {
		klog.ErrorS(err, "backup upload failed", "snapshot", snap.ID, "backup", ref.String())
		state := UploadFailed
		if Final(err) {
			state = UploadRefused // never retried: BackupStatus answers it
		}
		outcome = func(r *Record) {
			r.Upload, r.UploadError, r.UploadClass = state, err.Error(), Classify(err)
			r.UploadFailedAt = time.Now().UTC()
		}
	}
	if _, lerr := Update(context.Background(), m.pool, snap.ID, outcome); lerr != nil {
		klog.ErrorS(lerr, "record backup state", "snapshot", snap.ID)
		return
	}
	if err == nil {
		if m.cfg.Observer != nil {
			m.cfg.Observer.BackupDone(ref.Target)
		}
		m.SweepBases(context.Background())
	}
}
