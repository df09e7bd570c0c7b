package driver

import (
	"context"
	"errors"
	"sync"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
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
func (d *Driver) sweepBases(ctx context.Context) {
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
		if !ok || s.Labels[labelBackupUnreported] != "" {
			continue
		}
		if newest[k].ID != s.ID {
			d.deleteBase(s, "superseded by "+newest[k].Labels[labelBackupRef])
		} else if _, err := d.pool.Get(ctx, s.SourceID); errors.Is(err, backend.ErrNotFound) {
			d.deleteBase(s, "its volume was deleted")
		}
	}
}

// baseChain returns "TARGET:CHAIN" of an uploaded backup base.
func baseChain(s backend.LVol) (string, bool) {
	if s.Labels[labelBackupState] != backupDone {
		return "", false
	}
	r, err := parseBackupSnapshotID(s.Labels[labelBackupRef])
	if err != nil {
		return "", false
	}
	return r.Target + ":" + r.Chain, true
}

// newer reports whether base a's upload finished after b's (uploads into
// one chain commit in turn, so the last one done is the chain's latest);
// bases of older drivers, without the label, count as done when taken.
func newer(a, b backend.LVol) bool {
	da, db := a.Labels[labelBackupDoneAt], b.Labels[labelBackupDoneAt]
	switch {
	case da != db && da != "" && db != "":
		return da > db
	case da != db:
		return da != "" // a labelled base is newer than any older driver's
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

func (d *Driver) deleteBase(s backend.LVol, why string) {
	if err := d.pool.Delete(context.Background(), s.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "delete backup base", "snapshot", s.ID)
		return
	}
	klog.InfoS("backup base deleted", "snapshot", s.ID, "backup", s.Labels[labelBackupRef], "why", why)
}

// reportedReady records that a CreateSnapshot answered ready for snap,
// which may let the sweep delete it.
func (d *Driver) reportedReady(ctx context.Context, snap backend.LVol) {
	if snap.Labels[labelBackupUnreported] == "" {
		return
	}
	if _, err := d.pool.SetLabels(ctx, snap.ID, map[string]string{labelBackupUnreported: ""}); err != nil {
		klog.ErrorS(err, "record backup reported", "snapshot", snap.ID)
		return
	}
	d.sweepBases(ctx)
}
