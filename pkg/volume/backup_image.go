package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// BackupImage returns the block list of the backup a backup snapshot id
// names (s3chain.Image: every non-zero block's index and digest, checked
// against the manifest's volume digest), with the concrete reference:
// from the image record of this node's local snapshot of it when its
// upload recorded one (no request), else from the target, read with
// secrets (Repo.Image: a version-1 incremental's chain walked). Nothing
// but manifests is read. Errors: ErrNoBackup when the id names nothing
// that exists (an unknown target, chain or backup, a backup not ready);
// ClassDenied when the secrets lack the chain's key; the target's
// sentinels (s3chain.ErrChainBroken, ErrInvalidManifest, store errors),
// saying what was being read.
func (m *Manager) BackupImage(ctx context.Context, id string, secrets map[string]string) (*s3chain.Image, backupid.Ref, error) {
	ref, err := ParseBackupID(id)
	if err != nil {
		return nil, ref, ErrNoBackup
	}
	if !ref.Concrete() {
		// @latest moves: a delta against it could be computed against
		// another backup than the consumer recorded.
		return nil, ref, fmt.Errorf("%w: %s names no fixed backup; ask with the id ListSnapshots answers for it", ErrNoBackup, id)
	}
	if s, err := m.SnapshotOfBackup(ctx, id); err == nil && Of(s).Upload == Uploaded {
		if im, err := s3chain.ReadImage(m.ImageRecordPath(s.ID)); err == nil && SameChain(ref, ref.Target, im.Chain) && im.BackupID == ref.Backup {
			ref.Chain = im.Chain
			return im, ref, nil
		}
	}
	repo, err := m.cfg.Targets.Open(ctx, ref.Target, secrets)
	if errors.Is(err, target.ErrUnknownTarget) {
		return nil, ref, fmt.Errorf("%w: %s: %v", ErrNoBackup, id, err)
	} else if err != nil {
		return nil, ref, fmt.Errorf("open backup target %s: %w", ref.Target, err)
	}
	var im *s3chain.Image
	if ref, err = ResolveChain(ctx, repo, ref); err == nil {
		if im, err = repo.Image(ctx, ref.Chain, ref.Backup); err == nil {
			ref.Backup = im.BackupID
			return im, ref, nil
		}
	}
	switch {
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return nil, ref, fmt.Errorf("%w: backup %s: %v", ErrNoBackup, ref, err)
	case errors.Is(err, s3chain.ErrWrongKey):
		return nil, ref, Refuse(ClassDenied, "backup %s: %v; give the chain's %s in the request's secrets", ref, err, target.KeyEncryptionKey)
	}
	return nil, ref, fmt.Errorf("backup %s: %w", ref, err)
}
