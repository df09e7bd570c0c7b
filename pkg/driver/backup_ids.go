package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// A backup snapshot id names the target, chain and backup, so that it stays
// meaningful in another cluster: "backup:TARGET:CHAIN@BACKUP". When that
// exceeds the CSI spec's 128-byte limit for ids, the chain is replaced by
// "~" and 32 hex digits of its SHA-256, resolved by listing the target's chains.
const (
	backupIDPrefix = "backup:"
	maxCSIIDLen    = 128
	hashedMark     = "~"
)

// isBackupID reports whether a snapshot id names a backup.
func isBackupID(id string) bool { return strings.HasPrefix(id, backupIDPrefix) }

// isBackupSnapshotSource reports whether a content source is a backup snapshot.
func isBackupSnapshotSource(src *csi.VolumeContentSource) bool {
	return isBackupID(src.GetSnapshot().GetSnapshotId())
}

// backupSnapshotID builds the snapshot id of a backup (at most 128 bytes).
func backupSnapshotID(r target.Ref) string {
	id := backupIDPrefix + r.String()
	if len(id) <= maxCSIIDLen {
		return id
	}
	return backupIDPrefix + target.Ref{Target: r.Target, Chain: hashedMark + chainHash(r.Chain), Backup: r.Backup}.String()
}

func chainHash(chain string) string {
	h := sha256.Sum256([]byte(chain))
	return hex.EncodeToString(h[:16])
}

// parseBackupSnapshotID splits a backup snapshot id into a reference; a
// hashed chain comes back as "~HEX" for resolveChain. Errors wrap target.ErrBadRef.
func parseBackupSnapshotID(id string) (target.Ref, error) {
	rest := strings.TrimPrefix(id, backupIDPrefix)
	if t, after, ok := strings.Cut(rest, ":"); ok {
		if c, b, ok := strings.Cut(after, "@"); ok && strings.HasPrefix(c, hashedMark) {
			return target.Ref{Target: t, Chain: c, Backup: b}, nil
		}
	}
	r, err := target.ParseRef(rest)
	if err == nil && r.Target == "" {
		err = fmt.Errorf("%w: snapshot id %q names no target", target.ErrBadRef, id)
	}
	return r, err
}

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
		if hashedMark+chainHash(c) == r.Chain {
			r.Chain = c
			return r, nil
		}
	}
	return r, fmt.Errorf("%w: no chain of target %s hashes to %s", s3chain.ErrBackupNotFound, r.Target, r.Chain)
}
