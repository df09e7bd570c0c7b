package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// resumeRestore answers a retried CreateVolume whose lvol exists: the ready
// volume, progress of a running restore, or a restore restarted from its
// checkpoint after a driver restart. Other parameters are AlreadyExists.
func (d *restorer) resumeRestore(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest, lv backend.LVol) (*csi.CreateVolumeResponse, error) {
	if err := sameVolume(lv, vr, "", req.GetCapacityRange()); err != nil {
		return nil, err
	}
	rec := volume.Of(lv)
	if rec.RestoreRef == "" {
		return nil, status.Errorf(codes.AlreadyExists, "volume %q exists and was not restored from a backup", req.GetName())
	}
	if rec.Ready() {
		d.vols.ForgetJob(restoreKey(lv.Name)) // finished while no call waited
		return d.volumeResponse(lv, vr.source), nil
	}
	ref, err := target.ParseRef(rec.RestoreRef)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s records a bad restore reference: %v", lv.ID, err)
	}
	return d.awaitRestore(ctx, lv.Name, vr, d.startRestore(lv, ref, req.GetSecrets()))
}

// awaitRestore waits for the restore job of the volume called name within
// the call's deadline. Done: the ready volume. Failed: the final error
// that names the cause (reported once; the next call starts afresh). Still
// running: Aborted with progress.
func (d *restorer) awaitRestore(ctx context.Context, name string, vr volumeRequest, j *volume.Job) (*csi.CreateVolumeResponse, error) {
	if !volume.Wait(ctx, j) {
		if lv, err := d.pool.GetByName(ctx, backend.KindVolume, name); err == nil {
			d.events.restoreProgress(lv, j.Message())
		}
		return nil, status.Errorf(codes.Aborted, "volume %s: %s", name, j.Message())
	}
	d.vols.ForgetJob(restoreKey(name))
	if j.Err() != nil {
		if err := d.vols.TakeFailure(name); err != nil {
			return nil, err
		}
		return nil, status.Errorf(codes.Aborted, "restore of volume %s was cancelled: %v", name, j.Err())
	}
	lv, err := d.pool.GetByName(ctx, backend.KindVolume, name)
	if err != nil {
		return nil, volumeError("restored volume", err)
	}
	return d.volumeResponse(lv, vr.source), nil
}
