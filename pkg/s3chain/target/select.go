package target

import (
	"context"
	"fmt"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Select loads the manifest r names in repo: a backup id or "latest"
// directly, "before:T" and "group:ID" by reading the chain's backups.
// r.Target is not used (repo is its target). Errors: s3chain.ErrBackupNotFound
// (naming the chain and T or the group), and those of Repo.Manifest and
// Repo.Backups.
func Select(ctx context.Context, repo *s3chain.Repo, r Ref) (*s3chain.Manifest, error) {
	if r.Concrete() || r.Backup == Latest {
		return repo.Manifest(ctx, r.Chain, r.Backup)
	}
	// Headers only: a chain's block lists are not all held at once.
	ms, err := repo.BackupHeaders(ctx, r.Chain)
	if err != nil {
		return nil, err
	}
	m, err := pick(ms, r)
	if err != nil || m.Blocks != nil {
		return m, err
	}
	return repo.Manifest(ctx, r.Chain, m.ID) // read again, with its blocks
}

// pick chooses among a chain's manifests (any order) the one a "before:"
// or "group:" reference names: the newest qualifying by createdAt, equal
// times ordered by id, so the choice never depends on listing order.
func pick(ms []*s3chain.Manifest, r Ref) (*s3chain.Manifest, error) {
	ok := func(*s3chain.Manifest) bool { return false }
	var none string
	if t, isBefore := r.Before(); isBefore {
		ok = func(m *s3chain.Manifest) bool { return !m.CreatedAt.After(t) }
		none = fmt.Sprintf("chain %q has no backup created at or before %s (%s)",
			r.Chain, r.Backup[len(BeforePrefix):], t.UTC().Format(time.RFC3339Nano))
	} else if g, isGroup := r.Group(); isGroup {
		ok = func(m *s3chain.Manifest) bool { return m.GroupID == g }
		none = fmt.Sprintf("chain %q has no backup of group %q", r.Chain, g)
	} else {
		return nil, fmt.Errorf("%w %q: not a selector", ErrBadRef, r)
	}
	var best *s3chain.Manifest
	for _, m := range ms {
		if ok(m) && (best == nil || newer(m, best)) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s", s3chain.ErrBackupNotFound, none)
	}
	return best, nil
}

// newer orders backups by createdAt, then id.
func newer(a, b *s3chain.Manifest) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}
