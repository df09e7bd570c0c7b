package driver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// A backup class's retention policy (parameters keepLast, ...) is applied
// by the background gc of each chain, before its Repo.GC, once a backup
// made with a policy is answered ready (so the chain's gc delay, -gc-delay,
// coalesces a schedule's rounds). The policy owns the backups made with
// it: only those (their name records carry it: volume.BackupName.Retention)
// are candidates, decided by pkg/retention over the chain's backups made
// with a policy, under the policy of the newest of them (a class edited
// later applies from its next backup). A dropped backup is deleted as
// DeleteSnapshot deletes it (local snapshots, target, name record), which
// leaves its VolumeSnapshot and VolumeSnapshotContent naming a backup that
// is gone: docs/applications.md "A retention policy on the backup class"
// says so; restoring
// from it is NotFound, deleting it succeeds. Never deleted: a backup under
// S3 Object Lock retention (skipped and counted), one whose call lock is
// held (a DeleteSnapshot in progress), a group member while any member's
// chain keeps the group (groups are kept or dropped together).

// scheduleRetention arms the background gc of the chain of backup
// snapshot id, whose pass applies the chain's retention policy first
// (none with -gc-delay 0). A hashed chain is resolved first, as the gc
// needs the chain's name.
func (d *core) scheduleRetention(ctx context.Context, id string, secrets map[string]string) {
	ref, err := volume.ParseBackupID(id)
	if err != nil || d.gc == nil || d.gc.delay <= 0 {
		return
	}
	if ref.Hashed() {
		repo, err := d.targets.Open(ctx, ref.Target, secrets)
		if err == nil {
			ref, err = volume.ResolveChain(ctx, repo, ref)
		}
		if err != nil {
			klog.ErrorS(err, "retention: resolve the chain of a backup; its policy is applied at the chain's next deletion or ready backup", "snapshot", id)
			return
		}
	}
	d.gc.schedule(gcKey{ref.Target, ref.Chain}, secrets) // as deleteBackupSnapshot keys it
}

// retentionPass is one application of the policies to a chain.
type retentionPass struct {
	d       *core
	repo    *s3chain.Repo
	target  string
	secrets map[string]string
	// decided memoizes decide per chain: the verdicts by backup id.
	decided map[string]map[string]retention.Decision
	// ids are the recorded snapshot ids by backup id (hashed or not).
	ids map[string]string
}

// applyRetention deletes the backups of chain k that the retention
// policies they were made with no longer keep, and publishes what it did.
// Errors: reading the records or the chain; a failed delete is logged and
// left for the next pass.
func (d *core) applyRetention(ctx context.Context, repo *s3chain.Repo, k gcKey, secrets map[string]string) error {
	p := &retentionPass{d: d, repo: repo, target: k.target, secrets: secrets, decided: map[string]map[string]retention.Decision{}, ids: map[string]string{}}
	verdicts, err := p.decide(ctx, k.chain)
	if err != nil || len(verdicts) == 0 {
		return err
	}
	var keep, drop []string
	for id, v := range verdicts {
		if v.Keep || p.groupKept(ctx, k.chain, id) {
			keep = append(keep, id)
		} else {
			drop = append(drop, id)
		}
	}
	slices.Sort(drop)
	deleted, locked, freed := p.drop(ctx, k.chain, drop)
	kept := len(keep) + locked
	span := p.retainSpan(ctx, k.chain, append(keep, drop...))
	d.retentionMetrics.observe(gcKey{cmp.Or(k.target, d.targets.Default()), k.chain}, kept, deleted, locked, freed, span)
	klog.InfoS("retention applied", "target", k.target, "chain", k.chain, "kept", kept, "deleted", deleted,
		"locked", locked, "freedBytes", freed)
	return nil
}

// decide applies the chain's policy to its backups made with one: the
// verdicts by backup id (none when no backup of the chain has a policy).
func (p *retentionPass) decide(ctx context.Context, chain string) (map[string]retention.Decision, error) {
	if v, ok := p.decided[chain]; ok {
		return v, nil
	}
	recs, err := p.d.vols.RetainedBackups(p.target, chain)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	ms, err := p.repo.Backups(ctx, chain)
	if err != nil {
		return nil, err
	}
	byID := map[string]volume.RetainedBackup{}
	for _, r := range recs {
		byID[r.Backup] = r
		p.ids[r.Backup] = r.SnapshotID
	}
	var items []retention.Item
	var policy retention.Policy
	for _, m := range ms { // oldest first: the last policy is the newest backup's
		if r, ok := byID[m.ID]; ok {
			items = append(items, retention.Item{ID: m.ID, Time: m.CreatedAt})
			policy = r.Policy
		}
	}
	v := map[string]retention.Decision{}
	for _, dc := range retention.Apply(items, policy) {
		v[dc.ID] = dc
	}
	p.decided[chain] = v
	return v, nil
}

// groupKept reports whether backup id of chain is a member of a group
// backup that another member's chain keeps (or cannot tell: kept).
func (p *retentionPass) groupKept(ctx context.Context, chain, id string) bool {
	recs, err := p.d.vols.RetainedBackups(p.target, chain)
	if err != nil {
		return true
	}
	for _, r := range recs {
		if r.Backup != id || r.Group == "" {
			continue
		}
		for _, m := range r.Members {
			ref, err := volume.ParseBackupID(m)
			if err != nil {
				return true
			}
			if ref, err = volume.ResolveChain(ctx, p.repo, ref); err != nil {
				return true
			}
			if ref.Chain == chain {
				continue
			}
			v, err := p.decide(ctx, ref.Chain)
			if dc, ok := v[ref.Backup]; err != nil || ok && dc.Keep {
				return true // not gone from its chain (a broken group counts as dropped) nor dropped there
			}
		}
	}
	return false
}

// drop deletes the backups ids of chain as DeleteSnapshot does, a group
// member with all its group's members (of every chain: once one is gone
// the group's record goes, ForgetBackup, and would no longer name the
// others), but never a backup under Object Lock retention nor a group with
// one (locked counts those units), nor one whose call lock is held. It
// returns how many backups it deleted (of any chain: a group's members),
// how many units were locked, and the
// bytes of block objects only the deleted ones referenced
// (s3chain.RemovalPreview: what the gcs that follow free, young blocks
// after -gc-min-age).
func (p *retentionPass) drop(ctx context.Context, chain string, ids []string) (deleted, locked int, freed int64) {
	byChain := map[string][]string{} // deletable backup ids by chain
	var snaps []string
	for _, unit := range p.units(ctx, chain, ids) {
		ok, present := true, []memberRef{}
		for _, r := range unit {
			err := p.repo.Deletable(ctx, r.Chain, r.Backup)
			if errors.Is(err, s3chain.ErrRetained) {
				klog.InfoS("retention keeps a backup under Object Lock retention", "target", p.target, "chain", r.Chain, "backup", r.Backup, "reason", err)
			}
			ok = ok && (err == nil || errors.Is(err, s3chain.ErrBackupNotFound))
			if err == nil {
				present = append(present, r)
			}
		}
		if !ok {
			locked++
			continue
		}
		for _, r := range present { // one already gone (another pass) is not deleted again nor counted
			byChain[r.Chain] = append(byChain[r.Chain], r.Backup)
			snaps = append(snaps, r.snap)
		}
	}
	for c, bs := range byChain {
		preview, err := p.repo.RemovalPreview(ctx, c, bs)
		if err != nil {
			klog.ErrorS(err, "retention: preview of the freed bytes", "target", p.target, "chain", c)
		}
		freed += preview.FreedBytes
	}
	for _, id := range snaps {
		if p.deleteOne(ctx, id) {
			deleted++
		}
	}
	return deleted, locked, freed
}

// memberRef is one backup to delete: its resolved reference and the
// snapshot id its records name.
type memberRef struct {
	target.Ref
	snap string
}

// units groups the backups ids of chain into what is deleted together:
// a single backup alone, a group member with its group's members (each
// group once). A member whose chain cannot be resolved is left out.
func (p *retentionPass) units(ctx context.Context, chain string, ids []string) [][]memberRef {
	recs, _ := p.d.vols.RetainedBackups(p.target, chain)
	groupOf := map[string]volume.RetainedBackup{}
	for _, r := range recs {
		if r.Group != "" {
			groupOf[r.Backup] = r
		}
	}
	var out [][]memberRef
	seen := map[string]bool{}
	for _, id := range ids {
		g, ok := groupOf[id]
		if !ok {
			out = append(out, []memberRef{{target.Ref{Target: p.target, Chain: chain, Backup: id}, p.ids[id]}})
			continue
		}
		if seen[g.Group] {
			continue
		}
		seen[g.Group] = true
		var unit []memberRef
		for _, m := range g.Members {
			ref, err := volume.ParseBackupID(m)
			if err == nil {
				ref, err = volume.ResolveChain(ctx, p.repo, ref)
			}
			if err == nil {
				unit = append(unit, memberRef{ref, m})
			}
		}
		out = append(out, unit)
	}
	return out
}

// deleteOne deletes backup snapshot id under its DeleteSnapshot lock, as
// DeleteSnapshot does; false when it did not (logged).
func (p *retentionPass) deleteOne(ctx context.Context, id string) bool {
	unlock, err := lock(p.d.locks, lvolLock(id))
	if err != nil {
		klog.InfoS("retention: backup busy, left for the next pass", "snapshot", id)
		return false
	}
	defer unlock()
	if err := p.d.deleteBackupSnapshot(ctx, id, p.secrets); err != nil {
		klog.ErrorS(err, "retention: delete backup", "snapshot", id)
		return false
	}
	if err := p.d.vols.ForgetBackup(id); err != nil {
		klog.ErrorS(err, "retention: forget the backup's name", "snapshot", id)
	}
	klog.InfoS("backup deleted by its retention policy", "snapshot", id)
	return true
}

// retainSpan is the span of the retain-until dates of those of ids still
// on the target (one retention read each; none without Object Lock).
func (p *retentionPass) retainSpan(ctx context.Context, chain string, ids []string) retainSpan {
	var s retainSpan
	for _, id := range ids {
		if t, err := p.repo.RetainUntil(ctx, chain, id); err == nil && t.After(time.Now()) {
			s = s.add(t)
		}
	}
	return s
}
