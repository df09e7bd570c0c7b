package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// takeGroup snapshots the volumes ids (sorted) together and, for a backup
// group, starts each member's upload. The members' filesystems are frozen
// from the first freeze to the last reflink: O(members) reflinks, logged
// as frozenFor.
func (d *groups) takeGroup(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest, sp snapshotParams, ids []string) ([]backend.LVol, error) {
	srcs, err := d.groupSources(ctx, ids)
	if err != nil {
		return nil, err
	}
	var unlocks []func()
	defer func() {
		for _, unlock := range unlocks {
			unlock()
		}
	}()
	for _, s := range srcs {
		unlock, err := lock(d.locks, lvolLock(s.ID))
		if err != nil {
			return nil, err
		}
		unlocks = append(unlocks, unlock)
	}
	if err := d.memberNamesFree(ctx, req.GetName(), len(srcs)); err != nil {
		return nil, err
	}
	now := time.Now()
	gid := groupSnapshotID(req.GetName(), now)
	recs, refs, err := d.groupRecords(ctx, req, sp, srcs, gid, now)
	if err != nil {
		return nil, err
	}
	members, frozenFor, err := d.freezeAndReflink(ctx, req.GetName(), srcs, recs)
	if err != nil {
		return nil, err
	}
	klog.InfoS("group snapshot taken", "group", gid, "name", req.GetName(), "members", len(members), "frozenFor", frozenFor, "backup", sp.Backup)
	for i, m := range members {
		if sp.Backup {
			d.vols.StartUpload(m, refs[i], req.GetSecrets())
		}
	}
	return members, nil
}

// memberName is the snapshot lvol name of member i of the group called
// name: distinct for distinct groups and members (the digits after the
// last '-' are i), but a CreateSnapshot may use it too (takenByGroup).
func memberName(name string, i int) string { return fmt.Sprintf("%s-%d", name, i) }

// memberNamesFree refuses a group whose members' lvol names a snapshot
// holds already: the pool would hand that snapshot back as a member (and
// delete it with the group). This group's own members are never there:
// a retry finds them by their record first (groupMembers). Errors:
// AlreadyExists naming the snapshot, those of the pool.
func (d *groups) memberNamesFree(ctx context.Context, name string, n int) error {
	for i := range n {
		lv, err := d.pool.GetByName(ctx, backend.KindSnapshot, memberName(name, i))
		if errors.Is(err, backend.ErrNotFound) {
			continue
		} else if err != nil {
			return snapshotError("look up snapshot "+memberName(name, i), err)
		}
		return volume.Refuse(volume.ClassExists, "group snapshot %q names its member %d %q, a name snapshot %s holds already; use another group name",
			name, i, memberName(name, i), lv.ID)
	}
	return nil
}

// groupSources returns the member volumes; volumes that are not in this
// node's pool are refused by name (a group is frozen together, on one node).
func (d *groups) groupSources(ctx context.Context, ids []string) ([]backend.LVol, error) {
	var srcs []backend.LVol
	var elsewhere []string
	for _, id := range ids {
		src, err := d.getVolume(ctx, id)
		if errors.Is(err, backend.ErrNotFound) || (err == nil && !validVolumeID(id)) {
			elsewhere = append(elsewhere, id)
			continue
		} else if err != nil {
			return nil, snapshotError("", err)
		}
		srcs = append(srcs, src)
	}
	switch {
	case len(srcs) == 0:
		return nil, volume.Refuse(volume.ClassNotFound, "none of the volumes %s is on node %s", strings.Join(elsewhere, ", "), d.opts.NodeID)
	case len(elsewhere) > 0:
		var here []string
		for _, s := range srcs {
			here = append(here, s.ID)
		}
		return nil, volume.Refuse(volume.ClassPrecondition, "a group snapshot freezes its members together on one node: volumes %s are not on node %s (which has %s); group volumes of one node only",
			strings.Join(elsewhere, ", "), d.opts.NodeID, strings.Join(here, ", "))
	}
	return srcs, nil
}

// groupRecords are the member lvols' records and, for a backup group, each
// member's backup: its own chain, one backup id for all members (another
// only where a member's chain had it already).
func (d *groups) groupRecords(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest, sp snapshotParams, srcs []backend.LVol, gid string, now time.Time) ([]volume.Record, []target.Ref, error) {
	recs := make([]volume.Record, len(srcs))
	refs := make([]target.Ref, len(srcs))
	var repo *s3chain.Repo
	id := s3chain.NewBackupID(now)
	if sp.Backup {
		var err error
		if repo, err = d.targets.Open(ctx, sp.BackupTarget, req.GetSecrets()); err != nil {
			return nil, nil, snapshotError("open backup target", err)
		}
	}
	for i, s := range srcs {
		recs[i] = volume.Record{GroupID: gid, GroupName: req.GetName(), GroupMember: volume.ChainOf(s)}
		if !sp.Backup {
			continue
		}
		t, _ := d.targets.Lookup(sp.BackupTarget)
		refs[i] = target.Ref{Target: t.Name, Chain: volume.ChainOf(s), Backup: id}
		var err error
		if refs[i], err = d.vols.NewBackupRef(ctx, repo, refs[i], id); err != nil {
			return nil, nil, snapshotError("", err)
		}
		if err := volume.CheckChainFits(ctx, repo, refs[i], sp.BlockSize, s.SizeBytes); err != nil {
			return nil, nil, snapshotError("", err)
		}
		if err := repo.CheckOwner(ctx, refs[i].Chain, d.vols.Owner()); err != nil {
			return nil, nil, snapshotError("group backup", err)
		}
		recs[i].BlockSize = sp.BlockSize
		recs[i].Hidden, recs[i].BackupRef = true, volume.IDOf(refs[i])
		recs[i].Upload, recs[i].Unreported = volume.Uploading, true
	}
	return recs, refs, nil
}

// freezeAndReflink freezes every staged member, reflinks each into a
// snapshot lvol NAME-N, and thaws all, whatever failed. A failure deletes
// the snapshots already made. It returns how long the first filesystem
// was frozen.
func (d *groups) freezeAndReflink(ctx context.Context, name string, srcs []backend.LVol, recs []volume.Record) (members []backend.LVol, frozenFor time.Duration, err error) {
	var thaws []func()
	start := time.Now()
	defer func() {
		for _, thaw := range thaws {
			thaw()
		}
		frozenFor = time.Since(start)
		if err != nil {
			for _, m := range members {
				if derr := d.pool.Delete(context.WithoutCancel(ctx), m.ID); derr != nil && !errors.Is(derr, backend.ErrNotFound) {
					klog.ErrorS(derr, "delete a member of a failed group snapshot", "snapshot", m.ID)
				}
			}
			members = nil
		}
	}()
	for _, s := range srcs {
		thaw, err := d.freezeStaged(ctx, s.ID)
		if err != nil {
			return nil, 0, err // volume.ErrFrozen (Aborted) while another freeze holds it
		}
		thaws = append(thaws, thaw)
	}
	for i, s := range srcs {
		snap, err := d.vols.CreateSnapshot(ctx, backend.CreateOptions{Name: memberName(name, i),
			SourceID: s.ID, SizeBytes: s.SizeBytes}, volume.SnapshotRecord(s, recs[i]))
		if err != nil {
			return members, 0, snapshotError("snapshot lvol of group member "+s.ID, err)
		}
		members = append(members, snap)
	}
	return members, 0, nil
}
