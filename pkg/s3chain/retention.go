package s3chain

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// DeleteBackup removes one backup so that every other backup of the chain
// still restores. A backup without a child just loses its manifest. A
// backup with a child is first merged into it: the child's manifest is
// rewritten (atomically, Store.Put) to list the deleted backup's blocks it
// does not override and to link to the deleted backup's parent (or to
// become a full backup), and every later manifest is re-linked to the new
// digests. Manifests are rewritten newest first and the deleted one goes
// last, so an interrupted delete is completed by running it again (FORMAT.md
// §7). Blocks are left for GC. Errors: ErrBackupNotFound, ErrInvalidChain,
// ErrWrongKey, ErrInvalidManifest, store errors.
func (r *Repo) DeleteBackup(ctx context.Context, chain, backupID string) error {
	if err := ValidBackupID(backupID); err != nil {
		return err
	}
	cfg, err := r.chain(ctx, chain, false, 0)
	if err != nil {
		return err
	}
	all, err := r.Backups(ctx, chain)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(all, func(m *Manifest) bool { return m.ID == backupID })
	if i < 0 {
		return fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, chain, backupID)
	}
	del := all[i]
	rewritten, err := relinkAfterDelete(cfg, all, del)
	if err != nil {
		return err
	}
	for k := len(rewritten) - 1; k >= 0; k-- {
		if err := r.store.Put(ctx, manifestKey(chain, rewritten[k].ID), rewritten[k].Encode()); err != nil {
			return fmt.Errorf("rewrite manifest of backup %q in chain %q: %w", rewritten[k].ID, chain, err)
		}
	}
	if err := r.store.Delete(ctx, manifestKey(chain, backupID)); err != nil {
		return fmt.Errorf("delete manifest of backup %q in chain %q: %w", backupID, chain, err)
	}
	return nil
}

// relinkAfterDelete returns the manifests to rewrite when del goes, child
// first, each signed and linked to the one before: the child merged with
// del, then every descendant with a new ParentDigest. A hash link covers the
// whole parent manifest, so every descendant's link changes.
func relinkAfterDelete(cfg *chainConfig, all []*Manifest, del *Manifest) ([]*Manifest, error) {
	childOf := map[string]*Manifest{}
	for _, m := range all {
		if m.ParentID != "" {
			if other := childOf[m.ParentID]; other != nil {
				return nil, fmt.Errorf("%w: backups %q and %q both have parent %q", ErrChainBroken, other.ID, m.ID, m.ParentID)
			}
			childOf[m.ParentID] = m
		}
	}
	child := childOf[del.ID]
	if child == nil {
		return nil, nil
	}
	merged := mergeInto(del, child)
	if !merged.Full() {
		merged.ParentDigest = findParentDigest(all, del)
	}
	cfg.sign(merged)
	out := []*Manifest{merged}
	for prev := merged; childOf[prev.ID] != nil; {
		c := *childOf[prev.ID]
		c.ParentDigest = prev.Digest()
		cfg.sign(&c)
		out = append(out, &c)
		prev = &c
		if len(out) > maxChainLen {
			return nil, fmt.Errorf("%w: chain %q has a cycle", ErrChainBroken, cfg.Chain)
		}
	}
	return out, nil
}

func findParentDigest(all []*Manifest, del *Manifest) string {
	for _, m := range all {
		if m.ID == del.ParentID {
			return m.Digest()
		}
	}
	return del.ParentDigest // the parent is gone already: keep the old link
}

// mergeInto returns child as it must read once its parent del is gone: the
// same volume image over del's parent. Blocks child lists win; del's other
// blocks inside the child's volume are added; blocks beyond del's volume
// that child does not list become explicit zeros, since del truncated
// whatever its parent had there (see blockMap). A merge into a full backup
// makes a full backup, which lists no zero blocks.
func mergeInto(del, child *Manifest) *Manifest {
	m := *child
	m.ParentID, m.ParentDigest, m.MAC = del.ParentID, "", ""
	m.StoredBytes += del.StoredBytes
	n, nDel := child.NumBlocks(), del.NumBlocks()
	byIndex := make(map[int64]string, len(del.Blocks)+len(child.Blocks))
	for _, b := range del.Blocks {
		if b.Index < n {
			byIndex[b.Index] = b.Digest
		}
	}
	if !del.Full() {
		for i := nDel; i < n; i++ {
			byIndex[i] = ""
		}
	}
	for _, b := range child.Blocks {
		byIndex[b.Index] = b.Digest
	}
	m.Blocks = make([]BlockRef, 0, len(byIndex))
	m.DataBlocks, m.ZeroBlocks, m.DataBytes = 0, 0, 0
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		d := byIndex[i]
		if d == "" && m.Full() {
			continue
		}
		m.Blocks = append(m.Blocks, BlockRef{Index: i, Digest: d})
		if d == "" {
			m.ZeroBlocks++
		} else {
			m.DataBlocks++
			m.DataBytes += m.blockLen(i)
		}
	}
	return &m
}
