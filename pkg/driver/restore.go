package driver

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// restorer answers CreateVolume from a backup for the controller, which
// declares it: the request's backup parsed (restore_ref.go), the story
// (volume.Manager.Restore) called once. It is a helper, not a server.
type restorer struct{ *core }

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
		OwnChain: volume.ChainOf(backend.LVol{Name: req.GetName(), Labels: rec.Encode()}),
		Instant:  vr.params.Instant,
	})
	if err != nil {
		return nil, volumeError("", err)
	}
	return d.volumeResponse(lv, vr.source), nil
}

// observer is how the restore and backup stories tell the metrics, the
// claims' events and the listing cache (volume.Observer).
type observer struct {
	metrics *metrics
	events  *pvcEvents
	index   *backupIndex
}

func (o observer) RestoreWaiting(lv backend.LVol, message string) {
	o.events.restoreProgress(lv, message)
}

func (o observer) RestoreDone(j *volume.Job, lv backend.LVol, err error) {
	o.metrics.restoreDone(j, err)
	o.events.restoreDone(lv)
}

func (o observer) BackupStarted(target string) func(s3chain.BackupStats, error) {
	return o.metrics.backupStarted(target)
}

func (o observer) BackupDone(target string) { o.index.invalidate(target) }

func (o observer) HydrationFetch(d time.Duration, err error) { o.metrics.hydrationFetch(d, err) }
