package driver

import (
	"context"
	"errors"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// createRestoredVolume materialises an archived backup as a new volume.
// The call itself reads nothing from the backup target: a background job
// (restoreNew) reads the manifests, checks the request against them and
// the pool's room (volume.Manager.Admit) before allocating anything, creates the
// lvol and replays the chain into it, checking first that every block
// exists. So the answer comes within the call's deadline whatever the
// chain's length or size: the job's result (the volume or its error) when
// it ends in time, else Aborted with its progress; retries report progress
// until the volume is ready, then return it.
func (d *restorer) createRestoredVolume(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := d.vols.TakeFailure(req.GetName()); err != nil {
		return nil, err
	}
	if lv, err := d.pool.GetByName(ctx, backend.KindVolume, req.GetName()); err == nil {
		return d.resumeRestore(ctx, req, vr, lv)
	}
	ref := *vr.restore // parsed before the lock (validateCreateVolume)
	what := "restore of " + ref.String()
	j := d.vols.StartGatedJob(restoreKey(req.GetName()), what, func(ctx context.Context, j *volume.Job) error {
		return d.restoreNew(ctx, j, req, vr, ref)
	})
	// If the call does not wait (wait opens the gate), the job starts just
	// after the answer has gone out rather than competing with it.
	defer time.AfterFunc(answerHeadStart, j.Open)
	if j.What() != what {
		return nil, errBusy(req.GetName()) // another restore of that name is being prepared
	}
	return d.awaitRestore(ctx, req.GetName(), vr, j)
}

// answerHeadStart is how long a restore job started by a call that
// answers without waiting for it holds back, so that the answer is sent
// before the job's first burst of work (decoding a large manifest).
const answerHeadStart = 20 * time.Millisecond

// restoreNew is the job of a new restore: it admits the backup into the
// pool as a new lvol (admitBackup), then restores into it (runRestore).
// An error before the lvol exists is kept for the next call of the name.
func (d *restorer) restoreNew(ctx context.Context, j *volume.Job, req *csi.CreateVolumeRequest, vr volumeRequest, ref target.Ref) error {
	repo, lv, ref, err := d.admitBackup(ctx, req, vr, ref)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			d.vols.SetFailure(req.GetName(), err)
		}
		return err
	}
	// The target opened and the chain resolved by admitBackup serve the
	// whole restore: seed and every retry.
	d.seedRestore(ctx, lv, ref, repo)
	return d.runRestore(ctx, j, lv, ref, req.GetSecrets(), repo)
}

// admitBackup loads the manifest ref names ("latest" resolved), checks
// the request against it (size, access and filesystem type) and creates
// the lvol if the pool has room for it (volume.Manager.Admit). It returns the
// opened target too. Errors are statuses: those of openBackup,
// restoredSize, checkRestoredType, and ResourceExhausted when the pool has
// no room.
func (d *restorer) admitBackup(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest, ref target.Ref) (*s3chain.Repo, backend.LVol, target.Ref, error) {
	repo, m, ref, err := d.openBackup(ctx, ref, req.GetSecrets())
	if err != nil {
		return nil, backend.LVol{}, ref, err
	}
	size, err := restoredSize(req.GetCapacityRange(), m)
	if err != nil {
		return nil, backend.LVol{}, ref, err
	}
	if err := checkRestoredType(vr, m); err != nil {
		return nil, backend.LVol{}, ref, err
	}
	rec := volumeRecord(vr, backend.LVol{})
	rec.Phase, rec.RestoreRef, rec.RestoredFrom = volume.PhaseRestoring, ref.String(), ref.String()
	rec.FSType = m.FSType
	if err := checkRestoreFits(req.GetName(), rec, ref, m, size); err != nil {
		return nil, backend.LVol{}, ref, err
	}
	lv, err := d.vols.Admit(ctx, backend.CreateOptions{Name: req.GetName(), Kind: backend.KindVolume, SizeBytes: size}, rec, m.AllocatedBytes)
	if err != nil {
		return nil, lv, ref, volumeError("restore "+ref.String()+" into the pool", err)
	}
	klog.InfoS("restore started", "volume", lv.ID, "name", lv.Name, "backup", ref.String(), "size", size)
	return repo, lv, ref, nil
}

// checkRestoreFits refuses restoring backup m of chain ref.Chain into a
// volume of size bytes, named name with record rec, whose backups continue
// that chain (a claim re-created under the name the chain is of:
// chainName) when the chain cannot hold that size: OutOfRange (CSI spec
// "CreateVolume": the capacity range is not allowed), with the limit and
// the way out, as ControllerExpandVolume answers (checkGrowFits). A
// restore into any other claim starts the claim's own chain, which its
// first backup sizes to fit.
func checkRestoreFits(name string, rec volume.Record, ref target.Ref, m *s3chain.Manifest, size int64) error {
	if chainName(backend.LVol{Name: name, Labels: rec.Encode()}) != ref.Chain || size <= s3chain.MaxVolumeSize(m.BlockSize) {
		return nil
	}
	return errChainFull(codes.OutOfRange, ref.Chain, size, m.BlockSize)
}

// restoredSize applies the size rules: 0 means the backup's size; smaller
// than the backup is OutOfRange; larger is allowed (the node grows the
// filesystem on first stage).
func restoredSize(r *csi.CapacityRange, m *s3chain.Manifest) (int64, error) {
	if req := r.GetRequiredBytes(); req > 0 && req < m.SizeBytes {
		return 0, status.Errorf(codes.OutOfRange, "requested %d bytes is smaller than backup %s of %d bytes", req, m.ID, m.SizeBytes)
	}
	if lim := r.GetLimitBytes(); lim > 0 && lim < m.SizeBytes && lim >= r.GetRequiredBytes() {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range limit_bytes %d is smaller than backup %s of %d bytes", lim, m.ID, m.SizeBytes)
	}
	if r.GetRequiredBytes() == 0 {
		r = &csi.CapacityRange{RequiredBytes: m.SizeBytes, LimitBytes: r.GetLimitBytes()}
	}
	return sizeFor(r, m.SizeBytes)
}

// checkRestoredType refuses a request whose capability names another
// filesystem or access type than the backup holds: the node would either
// fail to mount it or, worse, format over it.
func checkRestoredType(vr volumeRequest, m *s3chain.Manifest) error {
	mode, err := s3chain.NormalizeVolumeMode(m.VolumeMode)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "backup %s: %v", m.ID, err)
	}
	if (vr.access == accessBlock) != (mode == s3chain.VolumeModeBlock) {
		return status.Errorf(codes.InvalidArgument, "backup %s is a %s volume but the request asks for %s access", m.ID, m.VolumeMode, vr.access)
	}
	if _, err := settleFSType(vr.fsType, m.FSType, "backup "+m.ID); err != nil {
		return err
	}
	return nil
}

// restoreKey is the job key of the restore of the volume called name:
// the request name, known before the lvol (and its id) exists.
func restoreKey(name string) string { return "restore:" + name }

// startRestore runs (or finds) the background restore of lv.
func (d *restorer) startRestore(lv backend.LVol, ref target.Ref, secrets map[string]string) *volume.Job {
	return d.vols.StartJob(restoreKey(lv.Name), "restore of "+ref.String(), func(ctx context.Context, j *volume.Job) error {
		return d.runRestore(ctx, j, lv, ref, secrets, nil)
	})
}

// runRestore restores into lv from repo (nil: opened with secrets on the
// first try), waiting out an unreachable target (volume.Manager.Restore). On a
// final failure it removes the lvol and keeps the error for the next call
// of that name.
func (d *restorer) runRestore(ctx context.Context, j *volume.Job, lv backend.LVol, ref target.Ref, secrets map[string]string, repo *s3chain.Repo) error {
	open := func(ctx context.Context) (*s3chain.Repo, error) { return d.targets.Open(ctx, ref.Target, secrets) }
	err := d.vols.Restore(ctx, j, lv, ref, repo, open)
	if errors.Is(err, context.Canceled) {
		return err
	}
	if err != nil {
		klog.ErrorS(err, "restore failed", "volume", lv.ID, "backup", ref.String())
		d.vols.SetFailure(lv.Name, volumeError("restore of "+ref.String()+" failed", err))
		d.removeRestored(lv)
	}
	d.metrics.restoreDone(j, err)
	d.events.restoreDone(lv)
	return err
}

// removeRestored deletes a restore's lvol and checkpoint.
func (d *restorer) removeRestored(lv backend.LVol) {
	if err := d.pool.Delete(context.Background(), lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "remove lvol of failed restore", "volume", lv.ID)
	}
	d.vols.DropRestoreState(lv.ID)
}

// cancelRestore stops a running restore of lv (DeleteVolume during a
// restore) and removes its checkpoint.
func (d *restorer) cancelRestore(lv backend.LVol) {
	d.vols.StopJob(restoreKey(lv.Name))
	d.vols.DropRestoreState(lv.ID)
}
