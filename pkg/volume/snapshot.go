package volume

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
)

// Freezer freezes the filesystem of a staged volume for the length of a
// reflink copy (pkg/driver's node: fsfreeze of its loop device's mount).
type Freezer interface {
	// Freeze freezes lvol id's filesystem when it is staged on this node
	// and returns its thaw (never nil; a no-op when nothing was frozen).
	// Errors are the caller's to return as they are (gRPC statuses).
	Freeze(ctx context.Context, id string) (thaw func(), err error)
}

// FreezerFunc is a function as a Freezer.
type FreezerFunc func(ctx context.Context, id string) (thaw func(), err error)

// Freeze calls f.
func (f FreezerFunc) Freeze(ctx context.Context, id string) (func(), error) { return f(ctx, id) }

// TakeSnapshot returns the snapshot lvol called name of volume sourceID,
// taking it if it does not exist yet: under the source's lock, its staged
// filesystem frozen (Config.Freezer) for the reflink, recording rec with
// the source's filesystem facts (SnapshotRecord). Errors: ClassExists for
// the same name of another source or a group's member, ErrBusy while another
// operation holds the source, ErrNotReady and backend.ErrNotFound for the
// source, the freezer's, and Pool.Create's wrapped "snapshot lvol".
func (m *Manager) TakeSnapshot(ctx context.Context, name, sourceID string, rec Record) (backend.LVol, error) {
	if snap, err := m.pool.GetByName(ctx, backend.KindSnapshot, name); err == nil {
		if err := takenByGroup(name, snap); err != nil {
			return snap, err
		}
		if snap.SourceID != sourceID {
			return snap, Refuse(ClassExists, "snapshot %q exists for another volume (%s)", name, snap.SourceID)
		}
		return snap, nil
	}
	src, err := m.readyVolume(ctx, sourceID)
	if err != nil {
		return src, err
	}
	if !m.locks.TryLock(src.ID) {
		return src, trylock.Busy(src.ID)
	}
	defer m.locks.Unlock(src.ID)
	thaw, err := m.cfg.Freezer.Freeze(ctx, src.ID)
	if err != nil {
		return src, err // Aborted while another freeze holds it
	}
	snap, err := m.CreateSnapshot(ctx, backend.CreateOptions{Name: name, SourceID: src.ID,
		SizeBytes: src.SizeBytes}, SnapshotRecord(src, rec))
	thaw()
	if err != nil {
		return snap, fmt.Errorf("snapshot lvol: %w", err)
	}
	klog.InfoS("snapshot taken", "snapshot", snap.ID, "name", name, "source", src.ID)
	return snap, nil
}

// takenByGroup is the ClassExists refusal of a snapshot called name whose
// lvol is a member of a group snapshot (named GROUP-N: single and group
// snapshots share the pool's snapshot names), so that the member never
// answers for, nor is deleted as, another snapshot. nil when snap is no
// group's member.
func takenByGroup(name string, snap backend.LVol) error {
	if g := Of(snap).GroupName; g != "" {
		return Refuse(ClassExists, "snapshot name %q is taken by a member of group snapshot %q (a group's members are named GROUP-N); use another name", name, g)
	}
	return nil
}

// SnapshotRecord is rec with the source's filesystem facts, so a volume
// created from the snapshot is never formatted.
func SnapshotRecord(src backend.LVol, rec Record) Record {
	s := Of(src)
	rec.FSType, rec.AccessType, rec.RestoredFrom = s.FSType, s.AccessType, s.RestoredFrom
	return rec
}
