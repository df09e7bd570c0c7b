package driver

import (
	"cmp"
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// startUpload runs (or finds) the background upload of a backup snapshot.
// The secrets live only in the job's closure, never on disk.
func (d *snapshotter) startUpload(snap backend.LVol, ref target.Ref, secrets map[string]string) *volume.Job {
	h := volume.UploadHooks{
		Open: func(ctx context.Context) (*s3chain.Repo, error) { return d.targets.Open(ctx, ref.Target, secrets) },
		Started: func() func(s3chain.BackupStats, error) {
			return d.metrics.backupStarted(cmp.Or(ref.Target, d.targets.Default()))
		},
	}
	return d.vols.StartJob(snap.ID, "backup upload", func(ctx context.Context, j *volume.Job) error {
		err := d.vols.Upload(ctx, j, snap, ref, h)
		d.finishUpload(snap, ref, err)
		return err
	})
}

// finishUpload records an upload's outcome on its snapshot: done, or
// failed with the cause and its class for the next CreateSnapshot: refused
// when no retry can ever upload it (volume.Final), else failed. A
// cancelled upload (driver stopping) stays "uploading" and restarts on the
// next call. A done snapshot is the chain's next FIEMAP base, so the sweep
// may now delete older ones (and this one, if its volume is gone).
func (d *snapshotter) finishUpload(snap backend.LVol, ref target.Ref, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	outcome := func(r *volume.Record) {
		r.Upload, r.UploadError, r.UploadClass, r.UploadDoneAt = volume.Uploaded, "", volume.ClassNone, time.Now().UTC()
	}
	if err != nil {
		klog.ErrorS(err, "backup upload failed", "snapshot", snap.ID, "backup", ref.String())
		state := volume.UploadFailed
		if volume.Final(err) {
			state = volume.UploadRefused // never retried: backupStatus answers it
		}
		outcome = func(r *volume.Record) {
			r.Upload, r.UploadError, r.UploadClass = state, err.Error(), volume.Classify(err)
			r.UploadFailedAt = time.Now().UTC()
		}
	}
	if _, lerr := volume.Update(context.Background(), d.pool, snap.ID, outcome); lerr != nil {
		klog.ErrorS(lerr, "record backup state", "snapshot", snap.ID)
		return
	}
	if err == nil {
		d.index.invalidate(ref.Target)
		d.vols.SweepBases(context.Background())
	}
}
