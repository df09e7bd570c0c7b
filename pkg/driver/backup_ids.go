package driver

import (
	"context"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// A backup snapshot id names the target, chain and backup:
// "backup:TARGET:CHAIN@BACKUP" (codec: pkg/backupid, shared with chainvolctl).
const (
	backupIDPrefix = backupid.Prefix
	maxCSIIDLen    = backupid.MaxLen
	hashedMark     = backupid.HashedMark
)

// isBackupID reports whether a snapshot id names a backup.
func isBackupID(id string) bool { return backupid.Is(id) }

// isBackupSnapshotSource reports whether a content source is a backup snapshot.
func isBackupSnapshotSource(src *csi.VolumeContentSource) bool {
	return isBackupID(src.GetSnapshot().GetSnapshotId())
}

// backupSnapshotID builds the snapshot id of a backup (at most 128 bytes).
func backupSnapshotID(r target.Ref) string { return backupid.Format(r) }

func chainHash(chain string) string { return backupid.ChainHash(chain) }

// parseBackupSnapshotID splits a backup snapshot id into a reference; a
// hashed chain comes back as "~HEX" for resolveChain. Errors wrap target.ErrBadRef.
func parseBackupSnapshotID(id string) (target.Ref, error) { return backupid.Parse(id) }

// resolveChain turns a hashed chain of a parsed id into the chain's name by
// listing the repository's chains. Errors: s3chain.ErrBackupNotFound.
func resolveChain(ctx context.Context, repo *s3chain.Repo, r target.Ref) (target.Ref, error) {
	if !strings.HasPrefix(r.Chain, hashedMark) {
		return r, nil
	}
	chains, err := repo.Chains(ctx)
	if err != nil {
		return r, err
	}
	for _, c := range chains {
		if backupid.Hashes(r.Chain, c) {
			r.Chain = c
			return r, nil
		}
	}
	return r, fmt.Errorf("%w: no chain of target %s hashes to %s", s3chain.ErrBackupNotFound, r.Target, r.Chain)
}
