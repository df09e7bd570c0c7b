package driver

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// reportedReady records that a CreateSnapshot answered ready for snap,
// which may let the sweep delete it.
func (d *snapshotter) reportedReady(ctx context.Context, snap backend.LVol) {
	if !volume.Of(snap).Unreported {
		return
	}
	if _, err := volume.Update(ctx, d.pool, snap.ID, func(r *volume.Record) { r.Unreported = false }); err != nil {
		klog.ErrorS(err, "record backup reported", "snapshot", snap.ID)
		return
	}
	d.vols.SweepBases(ctx)
}
