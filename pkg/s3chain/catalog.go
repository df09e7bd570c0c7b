package s3chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Chains returns the names of every chain in the repository, sorted. It
// reads only the config objects' keys.
func (r *Repo) Chains(ctx context.Context) ([]string, error) {
	var names []string
	err := r.listWithHidden(ctx, configPrefix, true, func(oi store.ObjectInfo) error {
		seg, ok := strings.CutSuffix(strings.TrimPrefix(oi.Key, configPrefix), ".json")
		if !ok || strings.Contains(seg, "/") {
			return nil // not ours: leave foreign objects alone
		}
		if name, err := decodeChain(seg); err == nil {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list chains in %s: %w", r.store, err)
	}
	slices.Sort(names)
	return names, nil
}

// Backups returns the verified manifests of chain's backups, oldest first
// (by CreatedAt, then id): in a chain with state records only the ready
// ones (FORMAT.md §7.5), else every manifest. A chain without backups
// gives an empty list. Errors: ErrInvalidChain, ErrWrongKey,
// ErrInvalidManifest, ErrFormatVersion.
func (r *Repo) Backups(ctx context.Context, chain string) ([]*Manifest, error) {
	return r.backups(ctx, chain, nil)
}

// BackupHeaders is Backups without the block lists (Blocks nil, and
// Digest and Encode no longer those of the stored manifest) in chains of
// version 2 and 3 without tombstones, so that choosing among a chain's
// backups (latest, before:T) holds one manifest's block list at a time
// rather than all of them; the caller reads the chosen one again. A
// version-1 chain's manifests keep theirs (its tombstones are checked
// against whole manifests). Same errors as Backups.
func (r *Repo) BackupHeaders(ctx context.Context, chain string) ([]*Manifest, error) {
	return r.backups(ctx, chain, func(*Manifest) {})
}

func (r *Repo) backups(ctx context.Context, chain string, sink func(*Manifest)) ([]*Manifest, error) {
	c, err := r.listManifests(ctx, chain, sink)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(c.all, func(m *Manifest) bool { return c.gone[m.ID] || c.state[m.ID] != ready }), nil
}

// tombstones maps each id with a tombstone to whether it kills the manifest
// stored now: a tombstone holds the digest of the manifest it deleted, so
// one left behind never hides a later backup that reuses the id.
func (r *Repo) tombstones(ctx context.Context, chain string, ms []*Manifest, marked []string) (map[string]bool, error) {
	byID := map[string]*Manifest{}
	for _, m := range ms {
		byID[m.ID] = m
	}
	gone := map[string]bool{}
	for _, id := range marked {
		data, err := r.store.GetMax(ctx, tombstoneKey(chain, id), 128)
		if errors.Is(err, store.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read tombstone of backup %q in chain %q: %w", id, chain, err)
		}
		gone[id] = byID[id] != nil && string(data) == byID[id].Digest()
	}
	return gone, nil
}

// allManifests returns every manifest object of chain, oldest first,
// including deleted version-1 manifests kept for their dependents and
// manifests that are not (or never will be) ready, and the tombstones
// found: true for one that deletes the manifest stored under its id, false
// for one left behind.
func (r *Repo) allManifests(ctx context.Context, chain string) ([]*Manifest, map[string]bool, error) {
	c, err := r.listManifests(ctx, chain, nil)
	return c.all, c.gone, err
}

// manifestSet is every manifest object of a chain, as listManifests read
// it: oldest first, with the tombstones (allManifests) and the readiness of
// each id (every one ready in a chain without state records), decided
// while each manifest was whole.
type manifestSet struct {
	cfg   *chainConfig
	all   []*Manifest
	gone  map[string]bool
	state map[string]readiness
	mtime map[string]time.Time // each manifest object's ModTime by the store's clock
}

// listManifests reads every manifest object of chain. With sink, in a
// chain of version 2 or 3 without tombstones, each ready manifest is passed
// to sink as it is read and every manifest but the pending ones (unready,
// not voided: rare, and a gc may still need their lists) is kept without
// its block list (Blocks nil): a chain's block lists are then never all in
// memory at once (gc of a chain of 1,000 backups of 1 Mi blocks would hold
// 88 GiB of them); otherwise sink is not called.
func (r *Repo) listManifests(ctx context.Context, chain string, sink func(*Manifest)) (manifestSet, error) {
	cfg, err := r.chain(ctx, chain, nil)
	if errors.Is(err, ErrBackupNotFound) {
		return manifestSet{}, nil
	}
	if err != nil {
		return manifestSet{}, err
	}
	d, err := r.listManifestDir(ctx, chain)
	if err != nil {
		return manifestSet{}, err
	}
	if cfg.FormatVersion == 1 || len(d.marked) > 0 {
		sink = nil
	}
	c := manifestSet{cfg: cfg, all: make([]*Manifest, 0, len(d.ids)), mtime: d.mtime, state: map[string]readiness{}}
	for _, id := range d.ids {
		m, err := r.loadManifest(ctx, cfg, id)
		if errors.Is(err, ErrBackupNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return manifestSet{}, err
		}
		if err := r.classify(ctx, &c, m, d.states); err != nil {
			return manifestSet{}, err
		}
		if sink != nil && c.state[id] != pending {
			if c.state[id] == ready {
				sink(m)
			}
			m.Blocks = nil
		}
		c.all = append(c.all, m)
	}
	sortBackups(c.all)
	c.gone, err = r.tombstones(ctx, chain, c.all, d.marked)
	return c, err
}

func sortBackups(ms []*Manifest) {
	slices.SortFunc(ms, func(a, b *Manifest) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// backupIDs lists the ids of the chain's manifest objects, and the ids
// with a tombstone (a deleted version-1 backup, FORMAT.md §7).
func (r *Repo) backupIDs(ctx context.Context, chain string) ([]string, []string, error) {
	d, err := r.listManifestDir(ctx, chain)
	return d.ids, d.marked, err
}

// manifestDirList is one listing of a chain's manifest prefix: the ids of
// its manifest objects (with their ModTimes), of its tombstones, and of its
// state records.
type manifestDirList struct {
	ids, marked []string
	states      map[string]bool
	mtime       map[string]time.Time
}

func (r *Repo) listManifestDir(ctx context.Context, chain string) (manifestDirList, error) {
	dir := manifestDir(chain)
	d := manifestDirList{states: map[string]bool{}, mtime: map[string]time.Time{}}
	err := r.listWithHidden(ctx, dir, false, func(oi store.ObjectInfo) error {
		name := strings.TrimPrefix(oi.Key, dir)
		if id, ok := strings.CutSuffix(name, ".json"); ok && ValidBackupID(id) == nil {
			d.ids = append(d.ids, id)
			d.mtime[id] = oi.ModTime
		}
		if id, ok := strings.CutSuffix(name, tombstoneSuffix); ok && ValidBackupID(id) == nil {
			d.marked = append(d.marked, id)
		}
		if id, ok := strings.CutSuffix(name, stateSuffix); ok && ValidBackupID(id) == nil {
			d.states[id] = true
		}
		return nil
	})
	if err != nil {
		return manifestDirList{}, fmt.Errorf("list backups of chain %q: %w", chain, err)
	}
	return d, nil
}

// Manifest returns the verified manifest of one backup; backupID "latest"
// names the newest. In a chain with state records (FORMAT.md §7.5) only a
// ready manifest is a backup. Errors: ErrBackupNotFound (also for a
// manifest voided or never finished), ErrBackupNotReady (wrapping
// ErrBackupNotFound: its commit may still be finished, Repo.ConfirmBackup),
// ErrInvalidChain, ErrWrongKey, ErrInvalidManifest, ErrFormatVersion.
func (r *Repo) Manifest(ctx context.Context, chain, backupID string) (*Manifest, error) {
	if backupID == backupid.Latest {
		ms, err := r.BackupHeaders(ctx, chain)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			return nil, fmt.Errorf("%w: chain %q has no backups", ErrBackupNotFound, chain)
		}
		if newest := ms[len(ms)-1]; newest.Blocks == nil {
			return r.Manifest(ctx, chain, newest.ID) // read again, with its blocks
		}
		return ms[len(ms)-1], nil
	}
	if err := ValidBackupID(backupID); err != nil {
		return nil, err
	}
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return nil, err
	}
	m, err := r.loadManifest(ctx, cfg, backupID)
	if err == nil && cfg.ReadyRecords {
		return m, r.checkReady(ctx, m)
	}
	if err != nil || cfg.FormatVersion != 1 { // only version-1 chains have tombstones
		return m, err
	}
	gone, err := r.tombstones(ctx, chain, []*Manifest{m}, []string{backupID})
	if err != nil {
		return nil, err
	}
	if gone[backupID] {
		return nil, fmt.Errorf("%w: backup %q of chain %q was deleted", ErrBackupNotFound, backupID, chain)
	}
	return m, nil
}

// loadManifest reads, decodes and authenticates one manifest, and checks
// that it is stored under its own chain and id (no swapped objects).
func (r *Repo) loadManifest(ctx context.Context, cfg *chainConfig, id string) (*Manifest, error) {
	data, err := r.store.GetMax(ctx, manifestKey(cfg.Chain, id), maxManifestBytes)
	if errors.Is(err, store.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, cfg.Chain, id)
	}
	if errors.Is(err, store.ErrObjectTooLarge) {
		return nil, fmt.Errorf("%w: manifest of backup %q in chain %q: %w", ErrInvalidManifest, id, cfg.Chain, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest of backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	if m.Chain != cfg.Chain || m.ID != id || m.BlockSize != cfg.BlockSize {
		return nil, fmt.Errorf("%w: object of backup %q in chain %q holds backup %q of chain %q (block size %d)", ErrInvalidManifest, id, cfg.Chain, m.ID, m.Chain, m.BlockSize)
	}
	if err := cfg.checkStoredMAC(m, data); err != nil {
		if fresh := r.reloadConfig(ctx, cfg); fresh != nil {
			return r.loadManifest(ctx, fresh, id) // the chain was re-created since cfg was cached
		}
		return nil, err
	}
	return m, nil
}

// reloadConfig returns the chain's stored config if it differs from the
// cached cfg (the chain was emptied and created again by another writer),
// replacing the cache; else nil.
func (r *Repo) reloadConfig(ctx context.Context, cfg *chainConfig) *chainConfig {
	data, err := r.store.GetMax(ctx, configKey(cfg.Chain), maxConfigBytes)
	if err != nil || bytes.Equal(data, cfg.raw) {
		return nil
	}
	fresh, err := r.openConfig(cfg.Chain, data)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	r.configs[cfg.Chain] = fresh
	r.mu.Unlock()
	return fresh
}

// ChainBlockSize returns the block size of chain in bytes, fixed by its
// first backup (FORMAT.md §1), from its config: one read, then cached by
// the Repo. A backup of a volume larger than MaxVolumeSize of it fails with
// ErrVolumeTooLarge. Errors: ErrBackupNotFound (the chain has no config:
// a backup would create it), ErrInvalidChain, ErrWrongKey, ErrFormatVersion,
// store errors.
func (r *Repo) ChainBlockSize(ctx context.Context, chain string) (int64, error) {
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return 0, err
	}
	return cfg.BlockSize, nil
}
