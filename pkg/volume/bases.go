package volume

import (
	"context"
	"errors"
	"os"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
)

// A backup's local snapshot (hidden) serves two purposes: it records the
// snapshot name's id until a CreateSnapshot has answered ready with it
// (one name, one id; after that the name's record in names.go does, also
// when the CO's retries outlive the volume), and
// once uploaded it is the FIEMAP base of the chain's next incremental
// backup. SweepBases deletes those that serve neither: uploaded, reported,
// and either of a deleted volume (no next backup will come: issue 14, no
// pool space held for deleted volumes) or superseded by a base of the same
// chain uploaded later. Every change that can make a base useless (an
// upload done, a CreateSnapshot answered ready, a volume deleted) is
// followed by a sweep, so the last sweep sees the final state.

// SweepBases deletes the backup bases that no longer serve (see above);
// sweeps run one at a time. Errors are logged: a base left behind is
// deleted by the next sweep.
func (m *Manager) SweepBases(ctx context.Context) {
	m.sweep.Lock()
	defer m.sweep.Unlock()
	snaps, err := m.pool.List(ctx, backend.KindSnapshot)
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
		if !ok || Of(s).Unreported {
			continue
		}
		if newest[k].ID != s.ID {
			m.deleteBase(s, "superseded by "+Of(newest[k]).BackupRef.String())
		} else if _, err := m.pool.Get(ctx, s.SourceID); errors.Is(err, backend.ErrNotFound) {
			m.deleteBase(s, "its volume was deleted")
		}
	}
}

// baseChain returns "TARGET:CHAIN" of an uploaded backup base.
func baseChain(s backend.LVol) (string, bool) {
	rec := Of(s)
	if rec.Upload != Uploaded {
		return "", false
	}
	r, err := rec.BackupRef.Ref()
	if err != nil {
		return "", false
	}
	return r.Target + ":" + r.Chain, true
}

// newer reports whether base a's upload finished after b's (uploads into
// one chain commit in turn, so the last one done is the chain's latest);
// bases of older drivers, without the label, count as done when taken.
func newer(a, b backend.LVol) bool {
	da, db := Of(a).UploadDoneAt, Of(b).UploadDoneAt
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

// deleteBase deletes backup base s, logging why; it reports whether the
// base is gone.
func (m *Manager) deleteBase(s backend.LVol, why string) bool {
	// Its image record first: a crash between leaves a base without one
	// (read from the manifest), never a record without a snapshot
	// (TestImageRecordsGoWithSnapshots).
	_ = os.Remove(m.ImageRecordPath(s.ID))
	if err := m.pool.Delete(context.Background(), s.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "delete backup base", "snapshot", s.ID)
		return false
	}
	klog.InfoS("backup base deleted", "snapshot", s.ID, "backup", Of(s).BackupRef, "why", why)
	return true
}
