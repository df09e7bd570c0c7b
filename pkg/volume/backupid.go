package volume

import (
	"context"
	"fmt"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// A backup snapshot id names the target, chain and backup of a backup:
// "backup:TARGET:CHAIN@BACKUP", at most MaxIDLen bytes, a chain too long
// for that written as "~" and a hash of its name (codec: pkg/backupid,
// shared with chainvolctl). This file is the driver's one door to it.

// MaxIDLen is the longest CSI id, in bytes (CSI spec "Size Limits").
const MaxIDLen = backupid.MaxLen

// IsBackupID reports whether a snapshot id names a backup.
func IsBackupID(id string) bool { return backupid.Is(id) }

// BackupID is the snapshot id of the backup r names (at most MaxIDLen bytes).
func BackupID(r target.Ref) string { return backupid.Format(r) }

// ParseBackupID splits a backup snapshot id into a reference; a hashed
// chain comes back as "~HEX" for ResolveChain. Errors wrap target.ErrBadRef.
func ParseBackupID(id string) (target.Ref, error) { return backupid.Parse(id) }

// ParseBackupSource is ParseBackupID that also takes a "before:T" or
// "group:ID" selector: the id of a restore source or a pre-provisioned
// snapshot handle (the volume populator's), which Restore and FindBackup
// resolve with target.Select. Errors wrap target.ErrBadRef.
func ParseBackupSource(id string) (target.Ref, error) { return backupid.ParseSource(id) }

// SameChain reports whether r, parsed from a backup snapshot id, names
// chain of target tgt, hashed or not.
func SameChain(r target.Ref, tgt, chain string) bool {
	return r.Target == tgt && backupid.Hashes(r.Chain, chain)
}

// ResolveChain turns a hashed chain of a parsed id into the chain's name by
// listing the repository's chains; other refs come back unchanged.
// Errors: s3chain.ErrBackupNotFound when no chain hashes to it, and those
// of Repo.Chains.
func ResolveChain(ctx context.Context, repo *s3chain.Repo, r target.Ref) (target.Ref, error) {
	if !r.Hashed() {
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
