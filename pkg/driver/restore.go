package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// createRestoredVolume materialises an archived backup as a new volume: it
// checks the backup and the request before allocating anything, then
// replays the chain into a new lvol in the background. A call that outlives
// its deadline answers Aborted with the progress; retries report progress
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
	repo, m, ref, err := d.openBackup(ctx, ref, req.GetSecrets())
	if err != nil {
		return nil, err
	}
	size, err := restoredSize(req.GetCapacityRange(), m)
	if err != nil {
		return nil, err
	}
	if err := checkRestoredType(vr, m); err != nil {
		return nil, err
	}
	if err := repo.Verify(ctx, ref.Chain, ref.Backup, false); err != nil {
		return nil, chainError("verify backup "+ref.String(), err)
	}
	labels := volumeLabels(vr, backend.LVol{})
	labels[labelState], labels[labelRestoreRef], labels[labelRestoredFrom] = stateRestoring, ref.String(), ref.String()
	labels[labelFSType] = m.FSType
	lv, err := d.pool.Create(ctx, backend.CreateOptions{Name: req.GetName(), Kind: backend.KindVolume, SizeBytes: size, Labels: labels})
	if err != nil {
		return nil, poolError("create lvol", err)
	}
	klog.InfoS("restore started", "volume", lv.ID, "name", lv.Name, "backup", ref.String(), "size", size)
	return d.awaitRestore(ctx, lv, vr, d.startRestore(lv, ref, req.GetSecrets()))
}

// restoredSize applies the size rules: 0 means the backup's size; smaller
// than the backup is OutOfRange; larger is allowed (the node grows the
// filesystem on first stage).
func restoredSize(r *csi.CapacityRange, m *s3chain.Manifest) (int64, error) {
	if req := r.GetRequiredBytes(); req > 0 && req < m.SizeBytes {
		return 0, status.Errorf(codes.OutOfRange, "requested %d bytes is smaller than backup %s of %d bytes", req, m.ID, m.SizeBytes)
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
	if (vr.access == accessBlock) != (m.VolumeMode == "block") {
		return status.Errorf(codes.InvalidArgument, "backup %s is a %s volume but the request asks for %s access", m.ID, m.VolumeMode, vr.access)
	}
	if vr.fsType != "" && m.FSType != "" && vr.fsType != m.FSType {
		return status.Errorf(codes.InvalidArgument, "backup %s holds a %s filesystem but the request asks for fsType %s; drop csi.storage.k8s.io/fstype from the StorageClass or set it to %s",
			m.ID, m.FSType, vr.fsType, m.FSType)
	}
	return nil
}

// checkpointPath is where a volume's restore records finished blocks.
func (d *Driver) checkpointPath(id string) string {
	return filepath.Join(d.opts.StateDir, "restores", id+".checkpoint")
}

// startRestore runs (or finds) the background restore of lv. On failure it
// removes the lvol and keeps the error for the next call of that name.
func (d *Driver) startRestore(lv backend.LVol, ref target.Ref, secrets map[string]string) *job {
	return d.jobs.start(lv.ID, "restore of "+ref.String(), func(ctx context.Context, j *job) error {
		err := d.restore(ctx, j, lv, ref, secrets)
		if err != nil && !errors.Is(err, context.Canceled) {
			klog.ErrorS(err, "restore failed", "volume", lv.ID, "backup", ref.String())
			d.failures.Store(lv.Name, chainError("restore of "+ref.String()+" failed", err))
			d.removeRestored(lv)
		}
		return err
	})
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
		Checkpoint: ckpt, Progress: j.progress})
	if err != nil {
		return err
	}
	labels := map[string]string{labelState: ""}
	if m.FSType == "" && m.VolumeMode != "block" {
		labels[labelFSType], _ = s3chain.DetectFSType(ctx, path)
	}
	if _, err := d.pool.SetLabels(context.Background(), lv.ID, labels); err != nil {
		return err
	}
	klog.InfoS("restore done", "volume", lv.ID, "backup", ref.String(), "fetchedBytes", st.FetchedBytes, "duration", st.Duration)
	return nil
}

// removeRestored deletes a restore's lvol and checkpoint.
func (d *Driver) removeRestored(lv backend.LVol) {
	if err := d.pool.Delete(context.Background(), lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "remove lvol of failed restore", "volume", lv.ID)
	}
	_ = os.Remove(d.checkpointPath(lv.ID))
}

// cancelRestore stops a running restore of lv (DeleteVolume during a
// restore) and removes its checkpoint.
func (d *Driver) cancelRestore(lv backend.LVol) {
	d.jobs.stop(lv.ID)
	_ = os.Remove(d.checkpointPath(lv.ID))
}
