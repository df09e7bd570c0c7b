package driver

import (
	"context"
	"errors"
	"sync"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// A backup's local snapshot (hidden) serves two purposes: it records the
// snapshot name's id until a CreateSnapshot has answered ready with it
// (one name, one id, even when the CO's retries outlive the volume), and
// once uploaded it is the FIEMAP base of the chain's next incremental
// backup. sweepBases deletes those that serve neither: uploaded, reported,
// and either of a deleted volume (no next backup will come: issue 14, no
// pool space held for deleted volumes) or superseded by a base of the same
// chain uploaded later. Every change that can make a base useless (an
// upload done, a CreateSnapshot answered ready, a volume deleted) is
// followed by a sweep, so the last sweep sees the final state.

// basesMu serialises sweeps.
var basesMu sync.Mutex

// sweepBases deletes the backup bases that no longer serve (see above).
func (d *snapshotter) sweepBases(ctx context.Context) {
	basesMu.Lock()
	defer basesMu.Unlock()
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		klog.ErrorS(err, "list backup bases")
		return
	}
	newest := map[string]backend.LVol{} // by "TARGET:CHAIN"
	for _, s := range snaps {
		if k, ok := baseChain(s); ok && (newest[k].ID == "" || newer(s, newest[k])) {
			newest[k] = s
		}
	}
	for _, s := range snaps {
		k, ok := baseChain(s)
		if !ok || volume.Of(s).Unreported {
			continue
		}
		if newest[k].ID != s.ID {
			d.deleteBase(s, "superseded by "+volume.Of(newest[k]).BackupRef)
		} else if _, err := d.pool.Get(ctx, s.SourceID); errors.Is(err, backend.ErrNotFound) {
			d.deleteBase(s, "its volume was deleted")
		}
	}
}

// baseChain returns "TARGET:CHAIN" of an uploaded backup base.
func baseChain(s backend.LVol) (string, bool) {
	rec := volume.Of(s)
	if rec.Upload != volume.Uploaded {
		return "", false
	}
	r, err := volume.ParseBackupID(rec.BackupRef)
	if err != nil {
		return "", false
	}
	return r.Target + ":" + r.Chain, true
}

// newer reports whether base a's upload finished after b's (uploads into
// one chain commit in turn, so the last one done is the chain's latest);
// bases of older drivers, without the label, count as done when taken.
func newer(a, b backend.LVol) bool {
	da, db := volume.Of(a).UploadDoneAt, volume.Of(b).UploadDoneAt
	switch {
	case !da.Equal(db) && !da.IsZero() && !db.IsZero():
		return da.After(db)
	case !da.Equal(db):
		return !da.IsZero() // a labelled base is newer than any older driver's
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

func (d *snapshotter) deleteBase(s backend.LVol, why string) {
	if err := d.pool.Delete(context.Background(), s.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "delete backup base", "snapshot", s.ID)
		return
	}
	klog.InfoS("backup base deleted", "snapshot", s.ID, "backup", volume.Of(s).BackupRef, "why", why)
}

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
	d.sweepBases(ctx)
}
