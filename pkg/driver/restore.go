package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// createRestoredVolume materialises an archived backup as a new volume:
// the story is volume.Manager.Restore's (resolve, admit, create, run or
// resume, wait or answer in progress, record, clean up on failure); the
// handler hands it the validated request, maps its error and answers.
// The answer comes within the call's deadline whatever the chain's length
// or size: the volume, the kept error of the last try, or Aborted with
// progress; retries report progress until the volume is ready.
func (d *restorer) createRestoredVolume(ctx context.Context, req *csi.CreateVolumeRequest, vr volumeRequest) (*csi.CreateVolumeResponse, error) {
	rec := volumeRecord(vr, backend.LVol{})
	r := req.GetCapacityRange()
	lv, err := d.vols.Restore(ctx, volume.RestoreRequest{
		Name: req.GetName(), Required: r.GetRequiredBytes(), Limit: r.GetLimitBytes(),
		Ref: *vr.restore, Secrets: req.GetSecrets(), Record: rec,
		OwnChain: chainName(backend.LVol{Name: req.GetName(), Labels: rec.Encode()}),
	})
	if err != nil {
		return nil, volumeError("", err)
	}
	return d.volumeResponse(lv, vr.source), nil
}

// restoreObserver is how the restores' story tells the metrics and the
// claims' events (volume.RestoreObserver).
type restoreObserver struct {
	metrics *metrics
	events  *pvcEvents
}

func (o restoreObserver) RestoreWaiting(lv backend.LVol, message string) {
	o.events.restoreProgress(lv, message)
}

func (o restoreObserver) RestoreDone(j *volume.Job, lv backend.LVol, err error) {
	o.metrics.restoreDone(j, err)
	o.events.restoreDone(lv)
}
