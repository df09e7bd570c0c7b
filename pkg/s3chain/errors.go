package s3chain

import (
	"errors"
	"fmt"
)

// Sentinel errors of the chain format and its engines. They are wrapped with
// %w together with the backup id, block index or path they concern, so
// callers match them with errors.Is and show the message to people.
var (
	// ErrBackupNotFound: the chain has no manifest with the requested backup
	// id, or no backup at all when "latest" was requested.
	ErrBackupNotFound = errors.New("backup not found")
	// ErrBackupNotReady: the backup's manifest is committed but its
	// confirm has not passed (FORMAT.md §7.5): it is not a backup yet, and
	// Repo.ConfirmBackup may finish it. It wraps ErrBackupNotFound.
	ErrBackupNotReady = fmt.Errorf("%w: not ready", ErrBackupNotFound)
	// ErrChainBroken: a manifest the requested backup depends on is missing,
	// or a hash link (ParentDigest) or the volume digest does not match.
	ErrChainBroken = errors.New("backup chain broken")
	// ErrCorruptBlock: a block object is missing, cannot be decoded, or its
	// content does not match the digest its manifest records.
	ErrCorruptBlock = errors.New("corrupt or missing block")
	// ErrWrongKey: the encryption key does not open the chain (or a key was
	// given for an unencrypted chain, or none for an encrypted one).
	ErrWrongKey = errors.New("wrong encryption key")
	// ErrDestinationTooSmall: the restore destination (the file or block
	// device a restore writes) is smaller than the backup's volume size.
	ErrDestinationTooSmall = errors.New("destination smaller than the backup")
	// ErrFormatVersion: an object was written by a newer (or unknown) version
	// of the chain format (docs/FORMAT.md) than this reader understands.
	ErrFormatVersion = errors.New("unsupported chain format version")
	// ErrInvalidChain: a chain name or backup id breaks the naming rules of
	// ValidChainName / ValidBackupID.
	ErrInvalidChain = errors.New("invalid chain name or backup id")
	// ErrInvalidManifest: a manifest object is not a well-formed manifest of
	// a supported version (bad JSON, out-of-range block, bad MAC).
	ErrInvalidManifest = errors.New("invalid manifest")
	// ErrInvalidOptions: BackupOptions/RestoreOptions/RepoOptions are
	// inconsistent (bad key length, block size differing from the chain's,
	// a Parent that is not the chain's latest backup).
	ErrInvalidOptions = errors.New("invalid options")
	// ErrVolumeTooLarge: the volume is larger than its chain can hold,
	// MaxVolumeSize of the chain's block size, which is fixed by the
	// chain's first backup (FORMAT.md §1): no retry can back it up into
	// that chain, only a new chain can. It wraps ErrInvalidOptions.
	ErrVolumeTooLarge = fmt.Errorf("%w: volume too large for its chain", ErrInvalidOptions)
	// ErrBackupExists: a backup with the requested id already exists in the
	// chain.
	ErrBackupExists = errors.New("backup already exists")
	// ErrChainBusy: the change cannot be made safely right now (a gc holds
	// the chain, or a racing writer changed what this one relied on); the
	// same call may succeed later (retryable: gRPC Aborted).
	ErrChainBusy = errors.New("chain busy, retry later")
	// ErrChainOwned: the chain is the history of another source than the
	// backup's (BackupOptions.Owner); the message names both owners and
	// the ways out (a chain of its own, or a takeover).
	ErrChainOwned = errors.New("chain belongs to another source")
	// ErrLeaseLost: a backup's in-progress marker was not refreshed in time
	// and may have been taken over by gc; the backup is not committed
	// (retryable).
	ErrLeaseLost = errors.New("chain lock lost")
	// ErrRetained: the backup is under S3 Object Lock retention and cannot
	// be deleted before its retain-until date, which the message names
	// (FORMAT.md §7.4; gRPC FailedPrecondition).
	ErrRetained = errors.New("backup under Object Lock retention")
)
