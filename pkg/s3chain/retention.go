package s3chain

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// DeleteBackup removes one backup; every other backup of the chain still
// restores, whatever else runs on the chain at the same time, and nothing
// is ever rewritten. A version-2 backup is self-contained, so its manifest
// is simply deleted: parallel deletes, a backup using it as parent, and
// restores of other backups are unaffected, and gc later frees the blocks
// no manifest references. A version-1 backup that other version-1 manifests
// still depend on gets a tombstone instead: it is gone for every reader but
// its manifest stays for its dependents, and goes (with the tombstone) once
// the last of them is deleted (FORMAT.md §7). A backup under S3 Object
// Lock retention is refused (ErrRetained, naming the date; §7.4).
// Errors: ErrRetained, ErrBackupNotFound
// (also for an already deleted backup), ErrInvalidChain, ErrWrongKey,
// ErrInvalidManifest, store errors.
func (r *Repo) DeleteBackup(ctx context.Context, chain, backupID string) error {
	if err := ValidBackupID(backupID); err != nil {
		return err
	}
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return err
	}
	if err := r.Deletable(ctx, chain, backupID); err != nil {
		return err
	}
	if cfg.ReadyRecords {
		return r.deleteDecided(ctx, cfg, backupID)
	}
	if cfg.FormatVersion >= 2 { // no version-1 manifest to depend on it
		if _, err := r.store.Stat(ctx, manifestKey(chain, backupID)); errors.Is(err, store.ErrObjectNotFound) {
			return fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, chain, backupID)
		} else if err != nil {
			return fmt.Errorf("delete backup %q in chain %q: %w", backupID, chain, err)
		}
		if err := r.store.Delete(ctx, manifestKey(chain, backupID)); err != nil {
			return fmt.Errorf("delete manifest of backup %q in chain %q: %w", backupID, chain, err)
		}
		return nil
	}
	all, gone, err := r.allManifests(ctx, chain)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(all, func(m *Manifest) bool { return m.ID == backupID })
	if i < 0 || gone[backupID] {
		return fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, chain, backupID)
	}
	if hasV1Dependent(all, backupID) {
		if err := r.store.Put(ctx, tombstoneKey(chain, backupID), []byte(all[i].Digest())); err != nil {
			return fmt.Errorf("delete backup %q in chain %q: %w", backupID, chain, err)
		}
		return nil
	}
	if err := r.store.Delete(ctx, manifestKey(chain, backupID)); err != nil {
		return fmt.Errorf("delete manifest of backup %q in chain %q: %w", backupID, chain, err)
	}
	_, err = r.purgeTombstones(ctx, chain, slices.Delete(all, i, i+1), gone)
	return err
}

// deleteDecided deletes backup id of a chain with state records (ready or
// not: a manifest left unready may be deleted too), after making sure its
// id has a state record (a void one, unless it has one): the record stays,
// so the id is never taken again and the delete, however late it lands,
// can only ever remove the manifest it was meant for or one that is never
// a backup (FORMAT.md §7.5).
func (r *Repo) deleteDecided(ctx context.Context, cfg *chainConfig, id string) error {
	key := manifestKey(cfg.Chain, id)
	if _, err := r.store.Stat(ctx, key); errors.Is(err, store.ErrObjectNotFound) {
		return fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, cfg.Chain, id)
	} else if err != nil {
		return fmt.Errorf("delete backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	// A void record names no manifest: every one under the id is dead.
	_, err := r.createState(ctx, cfg.Chain, id, "", stateVoid)
	if err != nil && !errors.Is(err, store.ErrObjectExists) { // decided already (ready, say): kept
		return fmt.Errorf("delete backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	if err := r.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete manifest of backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	return nil
}

// hasV1Dependent reports whether a version-1 manifest links to id as its
// parent (version-2 manifests never need their parent).
func hasV1Dependent(all []*Manifest, id string) bool {
	return slices.ContainsFunc(all, func(m *Manifest) bool { return m.FormatVersion == 1 && m.ParentID == id })
}

// purgeTombstones deletes the manifests (then the tombstones) of deleted
// version-1 backups that no manifest in all depends on any more, until
// none is left; all is the chain's manifests without those already gone.
// It returns the manifests that remain.
// Version-1 manifests are never created any more, so a manifest without
// dependents keeps none, whoever else deletes at the same time.
func (r *Repo) purgeTombstones(ctx context.Context, chain string, all []*Manifest, gone map[string]bool) ([]*Manifest, error) {
	for id, kills := range gone { // left behind: its manifest went already
		if !kills {
			if err := r.store.Delete(ctx, tombstoneKey(chain, id)); err != nil {
				return nil, fmt.Errorf("purge tombstone of backup %q of chain %q: %w", id, chain, err)
			}
		}
	}
	for purged := true; purged; {
		purged = false
		for k, m := range all {
			if !gone[m.ID] || hasV1Dependent(all, m.ID) {
				continue
			}
			// The manifest first: a tombstone left behind is harmless.
			if err := r.store.Delete(ctx, manifestKey(chain, m.ID)); err != nil {
				return nil, fmt.Errorf("purge deleted backup %q of chain %q: %w", m.ID, chain, err)
			}
			if err := r.store.Delete(ctx, tombstoneKey(chain, m.ID)); err != nil {
				return nil, fmt.Errorf("purge deleted backup %q of chain %q: %w", m.ID, chain, err)
			}
			all, purged = slices.Delete(all, k, k+1), true
			break
		}
	}
	return all, nil
}
