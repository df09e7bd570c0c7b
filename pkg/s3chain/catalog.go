package s3chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Chains returns the names of every chain in the repository, sorted. It
// reads only the config objects' keys.
func (r *Repo) Chains(ctx context.Context) ([]string, error) {
	var names []string
	err := r.store.List(ctx, configPrefix, func(oi ObjectInfo) error {
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

// Backups returns the verified manifests of chain, oldest first (by
// CreatedAt, then id). A chain without backups gives an empty list. Errors:
// ErrInvalidChain, ErrWrongKey, ErrInvalidManifest, ErrFormatVersion.
func (r *Repo) Backups(ctx context.Context, chain string) ([]*Manifest, error) {
	cfg, err := r.chain(ctx, chain, false, 0)
	if errors.Is(err, ErrBackupNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids, err := r.backupIDs(ctx, chain)
	if err != nil {
		return nil, err
	}
	ms := make([]*Manifest, 0, len(ids))
	for _, id := range ids {
		m, err := r.loadManifest(ctx, cfg, id)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	sortBackups(ms)
	return ms, nil
}

func sortBackups(ms []*Manifest) {
	slices.SortFunc(ms, func(a, b *Manifest) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// backupIDs lists the ids of the chain's manifest objects.
func (r *Repo) backupIDs(ctx context.Context, chain string) ([]string, error) {
	dir := manifestDir(chain)
	var ids []string
	err := r.store.List(ctx, dir, func(oi ObjectInfo) error {
		id, ok := strings.CutSuffix(strings.TrimPrefix(oi.Key, dir), ".json")
		if ok && ValidBackupID(id) == nil {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list backups of chain %q: %w", chain, err)
	}
	return ids, nil
}

// Manifest returns the verified manifest of one backup; backupID "latest"
// names the newest. Errors: ErrBackupNotFound, ErrInvalidChain, ErrWrongKey,
// ErrInvalidManifest, ErrFormatVersion.
func (r *Repo) Manifest(ctx context.Context, chain, backupID string) (*Manifest, error) {
	if backupID == "latest" {
		ms, err := r.Backups(ctx, chain)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			return nil, fmt.Errorf("%w: chain %q has no backups", ErrBackupNotFound, chain)
		}
		return ms[len(ms)-1], nil
	}
	if err := ValidBackupID(backupID); err != nil {
		return nil, err
	}
	cfg, err := r.chain(ctx, chain, false, 0)
	if err != nil {
		return nil, err
	}
	return r.loadManifest(ctx, cfg, backupID)
}

// loadManifest reads, decodes and authenticates one manifest, and checks
// that it is stored under its own chain and id (no swapped objects).
func (r *Repo) loadManifest(ctx context.Context, cfg *chainConfig, id string) (*Manifest, error) {
	data, err := r.store.Get(ctx, manifestKey(cfg.Chain, id))
	if errors.Is(err, ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, cfg.Chain, id)
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
	if err := cfg.checkMAC(m); err != nil {
		return nil, err
	}
	return m, nil
}

// putManifest signs m and stores it atomically (Store.Put).
func (r *Repo) putManifest(ctx context.Context, cfg *chainConfig, m *Manifest) error {
	cfg.sign(m)
	if err := r.store.Put(ctx, manifestKey(m.Chain, m.ID), m.Encode()); err != nil {
		return fmt.Errorf("write manifest of backup %q in chain %q: %w", m.ID, m.Chain, err)
	}
	return nil
}
