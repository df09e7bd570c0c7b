package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// resumeRestore answers a retried CreateVolume whose lvol exists: the ready
// volume, progress of a running restore, or a restore restarted from its
// checkpoint after a driver restart. Other parameters are AlreadyExists.
func (d *Driver) resumeRestore(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest, lv backend.LVol) (*csi.CreateVolumeResponse, error) {
	if err := sameVolume(lv, vr, "", req.GetCapacityRange()); err != nil {
		return nil, err
	}
	if lv.Labels[labelRestoreRef] == "" {
		return nil, status.Errorf(codes.AlreadyExists, "volume %q exists and was not restored from a backup", req.GetName())
	}
	if lv.Labels[labelState] == "" {
		d.jobs.forget(lv.ID) // finished while no call waited
		return d.volumeResponse(lv, vr.source), nil
	}
	ref, err := target.ParseRef(lv.Labels[labelRestoreRef])
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s records a bad restore reference: %v", lv.ID, err)
	}
	return d.awaitRestore(ctx, lv, vr, d.startRestore(lv, ref, req.GetSecrets()))
}

// awaitRestore waits for a restore within the call's deadline. Done: the
// ready volume. Failed: the final error that names the cause (reported
// once; the next call starts afresh). Still running: Aborted with progress.
func (d *Driver) awaitRestore(ctx context.Context, lv backend.LVol, vr volumeRequest, j *job) (*csi.CreateVolumeResponse, error) {
	if !wait(ctx, j) {
		d.metrics.restoreProgress(lv.ID, j)
		return nil, status.Errorf(codes.Aborted, "volume %s: %s", lv.Name, j.message())
	}
	d.jobs.forget(lv.ID)
	d.metrics.restoreDone(lv.ID)
	if j.err != nil {
		if v, ok := d.failures.LoadAndDelete(lv.Name); ok {
			return nil, v.(error)
		}
		return nil, status.Errorf(codes.Aborted, "restore of volume %s was cancelled: %v", lv.Name, j.err)
	}
	lv, err := d.pool.Get(ctx, lv.ID)
	if err != nil {
		return nil, poolError("restored volume", err)
	}
	return d.volumeResponse(lv, vr.source), nil
}
