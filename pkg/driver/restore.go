package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// createRestoredVolume materialises an archived backup as a new volume.
// The call itself reads nothing from the backup target: a background job
// (restoreNew) reads the manifests, checks the request against them and
// the pool's room (admitRestore) before allocating anything, creates the
// lvol and replays the chain into it, checking first that every block
// exists. So the answer comes within the call's deadline whatever the
// chain's length or size: the job's result (the volume or its error) when
// it ends in time, else Aborted with its progress; retries report progress
// until the volume is ready, then return it.
func (d *Driver) createRestoredVolume(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest) (*csi.CreateVolumeResponse, error) {
	if v, ok := d.failures.LoadAndDelete(req.GetName()); ok {
		return nil, v.(error)
	}
	if lv, err := d.pool.GetByName(ctx, backend.KindVolume, req.GetName()); err == nil {
		return d.resumeRestore(ctx, req, vr, lv)
	}
	ref, err := restoreRef(vr)
	if err != nil {
		return nil, err
	}
	t, err := d.targets.Lookup(ref.Target)
	if err != nil {
		return nil, chainError("backup target", err)
	}
	ref.Target = t.Name
	what := "restore of " + ref.String()
	j := d.jobs.startGated(restoreKey(req.GetName()), what, func(ctx context.Context, j *job) error {
		return d.restoreNew(ctx, j, req, vr, ref)
	})
	// If the call does not wait (wait opens the gate), the job starts just
	// after the answer has gone out rather than competing with it.
	defer time.AfterFunc(answerHeadStart, j.open)
	if j.what != what {
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
func (d *Driver) restoreNew(ctx context.Context, j *job, req *csi.CreateVolumeRequest, vr volumeRequest, ref target.Ref) error {
	lv, ref, err := d.admitBackup(ctx, req, vr, ref)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			d.failures.Store(req.GetName(), err)
		}
		return err
	}
	d.seedRestore(ctx, lv, ref, req.GetSecrets())
	return d.runRestore(ctx, j, lv, ref, req.GetSecrets())
}

// admitBackup loads the manifest ref names ("latest" resolved), checks
// the request against it (size, access and filesystem type) and creates
// the lvol if the pool has room for it (admitRestore). Errors are
// statuses: those of openBackup, restoredSize, checkRestoredType, and
// ResourceExhausted when the pool has no room.
func (d *Driver) admitBackup(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest, ref target.Ref) (backend.LVol, target.Ref, error) {
	_, m, ref, err := d.openBackup(ctx, ref, req.GetSecrets())
	if err != nil {
		return backend.LVol{}, ref, err
	}
	size, err := restoredSize(req.GetCapacityRange(), m)
	if err != nil {
		return backend.LVol{}, ref, err
	}
	if err := checkRestoredType(vr, m); err != nil {
		return backend.LVol{}, ref, err
	}
	labels := volumeLabels(vr, backend.LVol{})
	labels[labelState], labels[labelRestoreRef], labels[labelRestoredFrom] = stateRestoring, ref.String(), ref.String()
	labels[labelFSType] = m.FSType
	lv, err := d.admitRestore(ctx, backend.CreateOptions{Name: req.GetName(), Kind: backend.KindVolume, SizeBytes: size, Labels: labels}, m.AllocatedBytes)
	if err != nil {
		return lv, ref, poolError("restore "+ref.String()+" into the pool", err)
	}
	klog.InfoS("restore started", "volume", lv.ID, "name", lv.Name, "backup", ref.String(), "size", size)
	return lv, ref, nil
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

// checkpointPath is where a volume's restore records finished blocks.
func (d *Driver) checkpointPath(id string) string {
	return filepath.Join(d.opts.StateDir, "restores", id+".checkpoint")
}

// restoreKey is the job key of the restore of the volume called name:
// the request name, known before the lvol (and its id) exists.
func restoreKey(name string) string { return "restore:" + name }

// startRestore runs (or finds) the background restore of lv.
func (d *Driver) startRestore(lv backend.LVol, ref target.Ref, secrets map[string]string) *job {
	return d.jobs.start(restoreKey(lv.Name), "restore of "+ref.String(), func(ctx context.Context, j *job) error {
		return d.runRestore(ctx, j, lv, ref, secrets)
	})
}

// runRestore restores into lv, waiting out an unreachable target
// (restoreRetrying). On a final failure it removes the lvol and keeps the
// error for the next call of that name.
func (d *Driver) runRestore(ctx context.Context, j *job, lv backend.LVol, ref target.Ref, secrets map[string]string) error {
	err := d.restoreRetrying(ctx, j, lv, ref, secrets)
	if err != nil && !errors.Is(err, context.Canceled) {
		klog.ErrorS(err, "restore failed", "volume", lv.ID, "backup", ref.String())
		d.failures.Store(lv.Name, chainError("restore of "+ref.String()+" failed", err))
		d.removeRestored(lv)
		d.metrics.restoreDone(lv.ID, j, err)
	}
	return err
}

// restore replays the backup into the lvol, resumably, then marks it ready.
func (d *Driver) restore(ctx context.Context, j *job, lv backend.LVol, ref target.Ref, secrets map[string]string) error {
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if err != nil {
		return err
	}
	path, err := d.pool.DataPath(lv.ID)
	if err != nil {
		return err
	}
	ckpt := d.checkpointPath(lv.ID)
	if err := os.MkdirAll(filepath.Dir(ckpt), 0o700); err != nil {
		return err
	}
	m, st, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: ref.Chain, BackupID: ref.Backup, Target: path,
		Checkpoint: ckpt, Progress: j.progress, Base: d.seededBase(lv)})
	if err != nil {
		return err
	}
	_ = os.Remove(d.restoreBasePath(lv.ID))
	labels := map[string]string{labelState: "", labelRestoreAlloc: ""}
	if mode, _ := s3chain.NormalizeVolumeMode(m.VolumeMode); m.FSType == "" && mode != s3chain.VolumeModeBlock {
		labels[labelFSType], _ = s3chain.DetectFSType(ctx, path)
	}
	if _, err := d.pool.SetLabels(context.Background(), lv.ID, labels); err != nil {
		return err
	}
	klog.InfoS("restore done", "volume", lv.ID, "backup", ref.String(), "fetchedBytes", st.FetchedBytes, "baseBlocks", st.BaseBlocks, "duration", st.Duration)
	return nil
}

// removeRestored deletes a restore's lvol and checkpoint.
func (d *Driver) removeRestored(lv backend.LVol) {
	if err := d.pool.Delete(context.Background(), lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "remove lvol of failed restore", "volume", lv.ID)
	}
	_ = os.Remove(d.checkpointPath(lv.ID))
	_ = os.Remove(d.restoreBasePath(lv.ID))
}

// cancelRestore stops a running restore of lv (DeleteVolume during a
// restore) and removes its checkpoint.
func (d *Driver) cancelRestore(lv backend.LVol) {
	d.jobs.stop(restoreKey(lv.Name))
	_ = os.Remove(d.checkpointPath(lv.ID))
	_ = os.Remove(d.restoreBasePath(lv.ID))
}
