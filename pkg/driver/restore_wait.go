package driver

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

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
		d.jobs.forget(restoreKey(lv.Name)) // finished while no call waited
		return d.volumeResponse(lv, vr.source), nil
	}
	ref, err := target.ParseRef(lv.Labels[labelRestoreRef])
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s records a bad restore reference: %v", lv.ID, err)
	}
	return d.awaitRestore(ctx, lv.Name, vr, d.startRestore(lv, ref, req.GetSecrets()))
}

// awaitRestore waits for the restore job of the volume called name within
// the call's deadline. Done: the ready volume. Failed: the final error
// that names the cause (reported once; the next call starts afresh). Still
// running: Aborted with progress.
func (d *Driver) awaitRestore(ctx context.Context, name string, vr volumeRequest, j *job) (*csi.CreateVolumeResponse, error) {
	if !wait(ctx, j) {
		if lv, err := d.pool.GetByName(ctx, backend.KindVolume, name); err == nil {
			d.metrics.restoreProgress(lv.ID, j)
			d.events.restoreProgress(lv, j.message())
		}
		return nil, status.Errorf(codes.Aborted, "volume %s: %s", name, j.message())
	}
	d.jobs.forget(restoreKey(name))
	if j.err != nil {
		if v, ok := d.failures.LoadAndDelete(name); ok {
			return nil, v.(error)
		}
		return nil, status.Errorf(codes.Aborted, "restore of volume %s was cancelled: %v", name, j.err)
	}
	lv, err := d.pool.GetByName(ctx, backend.KindVolume, name)
	if err != nil {
		return nil, poolError("restored volume", err)
	}
	d.metrics.restoreDone(lv.ID, j, nil)
	d.events.restoreDone(lv)
	return d.volumeResponse(lv, vr.source), nil
}

// Waits of a restore whose backup target is unreachable: from retryFirst,
// doubling per failed try up to retryMax, each drawn at random from its
// upper half so that the restores of many nodes do not retry in step.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// restoreRetrying runs the restore of lv until it succeeds or fails for
// good. An unreachable target (unreachable: s3chain.ErrTransient after the
// store's own retries, connection refused, timeouts) pauses it, shown in
// the job's message as "waiting for target: CAUSE", and it tries again
// with backoff for as long as it takes (DeleteVolume cancels it); the
// checkpoint keeps what is written, so each try continues where the last
// stopped. Any other error ends it, as does the pool guard (guardRoom),
// whose backend.ErrNoSpace is returned as the error.
func (d *Driver) restoreRetrying(ctx context.Context, j *job, lv backend.LVol, ref target.Ref, secrets map[string]string) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go d.guardRoom(ctx, lv, stop)
	wait := retryFirst
	for {
		before := j.bytes.Load()
		err := d.restore(ctx, j, lv, ref, secrets)
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		if err == nil || !unreachable(err) {
			return err
		}
		if j.bytes.Load() > before {
			wait = retryFirst // it got somewhere: a new outage
		}
		j.setWaiting(err, wait)
		klog.InfoS("restore waits for its backup target", "volume", lv.ID, "retryIn", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}
