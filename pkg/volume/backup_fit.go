package volume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// BlockSizeParam is the VolumeSnapshotClass parameter that sets a chain's
// block size (pkg/driver's ParamBlockSize), named in refusals.
const BlockSizeParam = "blockSize"

// CheckChainFits refuses, before any snapshot is taken, a backup of a
// volume of size bytes asking block size bs (bytes, 0 for none) that its
// chain can never take: ClassInvalid when bs differs from the block size
// of the chain (its config: fixed by its first backup) or is too small
// for the volume of a new chain; ClassTooLarge (ChainFull) when the volume
// has outgrown the chain (or is larger than any chain holds: 64 TiB at 64
// MiB blocks), so that no snapshot lvol is taken, and none piles up, for
// an upload that would fail for good. A chain without a config takes bs,
// or newChainBlockSize's choice. Errors also: those of reading the chain's
// config.
func CheckChainFits(ctx context.Context, repo *s3chain.Repo, ref backupid.Ref, bs, size int64) error {
	cbs, err := repo.ChainBlockSize(ctx, ref.Chain)
	switch {
	case errors.Is(err, s3chain.ErrBackupNotFound) && bs != 0 && size > s3chain.MaxVolumeSize(bs):
		return Refuse(ClassInvalid, "parameter %s %s holds volumes up to %d bytes (%d blocks), but volume of chain %q has %d; ask for a larger block size",
			BlockSizeParam, Quantity(bs), s3chain.MaxVolumeSize(bs), s3chain.MaxBlocks, ref.Chain, size)
	case errors.Is(err, s3chain.ErrBackupNotFound) && size > s3chain.MaxVolumeSize(s3chain.MaxBlockSize):
		return Refuse(ClassTooLarge, "a volume of %d bytes is larger than any backup chain holds: %d bytes (%d blocks of the largest block size, %s)",
			size, s3chain.MaxVolumeSize(s3chain.MaxBlockSize), s3chain.MaxBlocks, Quantity(s3chain.MaxBlockSize))
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read the chain's block size: %w", err)
	case bs != 0 && bs != cbs:
		return Refuse(ClassInvalid, "parameter %s is %d bytes but chain %q has block size %d bytes (%s), fixed by its first backup; use %s: %q or a new chain",
			BlockSizeParam, bs, ref.Chain, cbs, Quantity(cbs), BlockSizeParam, Quantity(cbs))
	case size > s3chain.MaxVolumeSize(cbs):
		return ChainFull(ClassTooLarge, ref.Chain, size, cbs)
	}
	return nil
}

// NewBackupRef returns ref with a backup id (s3chain.NewBackupID) that
// names no backup of the chain in repo and no pending upload of this node,
// drawing again while one does. An id is never handed out twice, also not
// after its backup was deleted (s3chain.NewBackupID says why). Errors:
// those of reading the chain's manifests, wrapped "choose backup id".
func (m *Manager) NewBackupRef(ctx context.Context, repo *s3chain.Repo, ref backupid.Ref, id string) (backupid.Ref, error) {
	ref.Backup = id
	for {
		_, err := repo.Manifest(ctx, ref.Chain, ref.Backup)
		if errors.Is(err, s3chain.ErrBackupNotFound) && !m.backupRefTaken(ctx, BackupID(ref)) {
			return ref, nil
		} else if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
			return ref, fmt.Errorf("choose backup id: %w", err)
		}
		ref.Backup = s3chain.NewBackupID(time.Now())
	}
}

// backupRefTaken reports whether a local snapshot already carries id.
func (m *Manager) backupRefTaken(ctx context.Context, id string) bool {
	_, err := m.SnapshotOfBackup(ctx, id)
	return err == nil
}
