package s3chain

import "time"

// Defaults of the engines.
const (
	// DefaultBlockSize is the block size of a new chain in bytes (2 MiB),
	// chosen by measurement (docs/BENCHMARKS.md, "Block size"): against 4
	// MiB it halves the bytes an incremental of scattered small file
	// changes uploads (below restic's) at the same restore speed; 1 MiB
	// uploads less still but restores a third slower.
	DefaultBlockSize = 2 << 20
	// DefaultWorkers is the number of blocks processed in parallel when the
	// options leave Workers at 0.
	DefaultWorkers = 8
	// MinBlockSize and MaxBlockSize bound a chain's block size in bytes; it
	// must also be a multiple of 4096 so that blocks align with filesystem
	// extents (FIEMAP) and device sectors.
	MinBlockSize = 64 << 10
	MaxBlockSize = 64 << 20
	// DefaultLeaseTTL is the validity of an in-progress marker or gc lock
	// without a refresh; holders refresh every DefaultLeaseTTL/5.
	DefaultLeaseTTL = 10 * time.Minute
	// DefaultGCMinAge is the default grace of GC: unreferenced blocks younger
	// than this stay, as a margin for writers of older versions that take no
	// markers (FORMAT.md §7).
	DefaultGCMinAge = time.Hour
	// MinTempAge is the least age (by mtime) at which GC deletes the
	// temporary file of a file-store write: a live write holds its file
	// for seconds, so an hour-old one is a killed writer's.
	MinTempAge = time.Hour
)

// RepoOptions configure a Repo.
type RepoOptions struct {
	// EncryptionKey is nil for no encryption, else exactly 32 bytes: the
	// AES-256-GCM key of every block object and of the chain's digest key.
	EncryptionKey []byte
	// LeaseTTL is how long an in-progress marker or gc lock stays valid
	// without a refresh (FORMAT.md §7); 0 means DefaultLeaseTTL. Every
	// writer on one store must use the same value.
	LeaseTTL time.Duration
}

// BackupOptions describe one backup of a volume snapshot into a chain.
type BackupOptions struct {
	// Chain is the chain name (see ValidChainName).
	Chain string
	// Source is the path of a read-only snapshot: a regular file or a block
	// device. It must not change while the backup runs.
	Source string
	// SizeBytes is the volume size in bytes; 0 means the source's size.
	SizeBytes int64
	// Base is the optional path of the parent backup's snapshot, still
	// sharing extents with Source on a reflink filesystem; with it, changed
	// blocks are found by comparing FIEMAP extents instead of reading all.
	Base string
	// Parent is the parent backup id; "" makes a full backup. A parent must
	// be the chain's latest backup.
	Parent string
	// BlockSize in bytes; 0 means the chain's block size, or
	// DefaultBlockSize for a new chain. It is fixed per chain.
	BlockSize int64
	// Workers is the number of blocks read, compressed and uploaded in
	// parallel; 0 means DefaultWorkers. Memory use is about 2 x Workers x
	// BlockSize.
	Workers int
	// Descriptive fields copied into the manifest. FSType "" means unknown.
	VolumeMode, FSType, SourceVolume, Node, GroupID, Member string
	// BackupID is optional; the default is the UTC creation time like
	// 20261129T101500Z, made unique in the chain.
	BackupID string
	// Owner names the source this chain is the history of (the driver:
	// its cluster; chainvolctl: host and source), recorded in the chain
	// and its manifests (FORMAT.md §3.3). A backup by another owner than
	// the chain's is ErrChainOwned, unless TakeOver (a planned migration:
	// the chain then belongs to Owner). "" skips the check.
	Owner    string
	TakeOver bool
	// Progress, if set, is called from any goroutine as blocks finish.
	Progress func(Progress)
}

// RestoreOptions describe one restore of a backup onto a destination (a
// file or block device; not to be confused with the backup target, the
// object store the Repo reads from).
type RestoreOptions struct {
	// Chain is the chain name; BackupID the backup, or "latest".
	Chain, BackupID string
	// Destination is a regular file or block device of at least the
	// backup's SizeBytes. A missing file is created sparse with exactly
	// that size.
	Destination string
	// Workers is the number of blocks fetched in parallel; 0 means
	// DefaultWorkers. Memory use is about 2 x Workers x block size.
	Workers int
	// Checkpoint is the optional path of a checkpoint file that makes the
	// restore resumable; "" means not resumable. It is removed on success.
	Checkpoint string
	// Progress, if set, is called from any goroutine as blocks finish.
	Progress func(Progress)
	// Base, if set, is the image the destination already holds (the caller made
	// the destination a reflink copy of a local snapshot of that backup of the
	// same chain): blocks with the same digest at the same index are neither
	// fetched nor written; every other block is, zero blocks included
	// (punched). The caller vouches for the destination's bytes; with
	// VerifyBase they are read back and hashed first, and mismatches are
	// fetched. A base of another chain or block size is ignored.
	Base       *Image
	VerifyBase bool
}

// Progress reports how far a backup or restore is, in bytes of the volume
// (blocks skipped as unchanged, zero or already restored count as done).
type Progress struct{ DoneBytes, TotalBytes int64 }

// BackupStats are the counters of one backup.
type BackupStats struct {
	// ScannedBytes were read from the source (holes and blocks FIEMAP shows
	// unchanged are not read).
	ScannedBytes int64
	// ChangedBytes is the size of the non-zero blocks this manifest lists.
	ChangedBytes int64
	// UploadedBytes is the raw size of the blocks uploaded (not deduplicated).
	UploadedBytes int64
	// StoredBytes is the size of the objects uploaded (compressed, sealed).
	StoredBytes int64
	// Blocks is the number of non-zero blocks listed; ZeroBlocks the number
	// of all-zero blocks found in read data (not uploaded); DedupBlocks the
	// listed blocks whose object already existed in the chain.
	Blocks, ZeroBlocks, DedupBlocks int
	// Duration is the wall time of the backup.
	Duration time.Duration
}

// RestoreStats are the counters of one restore.
type RestoreStats struct {
	// FetchedBlocks were downloaded and written; SkippedBlocks were already
	// restored according to the checkpoint; ZeroBlocks were made zero.
	FetchedBlocks, SkippedBlocks, ZeroBlocks int
	// BaseBlocks were already on the destination (RestoreOptions.Base).
	BaseBlocks int
	// FetchedBytes is the size of the objects downloaded; WrittenBytes the
	// bytes written to the destination (data, not zeros punched as holes).
	FetchedBytes, WrittenBytes int64
	// Duration is the wall time of the restore.
	Duration time.Duration
}

// GCOptions configure a garbage collection.
type GCOptions struct {
	// DryRun counts what would be deleted without deleting.
	DryRun bool
	// MinAge keeps unreferenced blocks younger than this (by the store's
	// clock). Blocks of backups in progress are protected by their locks
	// whatever MinAge is; the grace only matters for writers of format
	// version 1, which refresh no lock. chainvolctl defaults to
	// DefaultGCMinAge; 0 means no grace period.
	MinAge time.Duration
	// Chain limits the collection to one chain; "" means every chain.
	Chain string
}

// GCStats are the counters of one garbage collection.
type GCStats struct {
	// Chains examined; SkippedChains had a backup (or a delete that rewrites
	// manifests) in progress and were left alone.
	Chains, SkippedChains int
	// OtherKeyChains were left alone because the repository's key does not
	// open them (a collection of every chain only; for one chain it is an
	// error).
	OtherKeyChains int
	// Blocks seen; DeletedBlocks (or would be, in a dry run) and their bytes.
	Blocks, DeletedBlocks int
	DeletedBytes          int64
	// YoungBlocks were unreferenced but younger than MinAge.
	YoungBlocks int
	// LockedBlocks were unreferenced but under Object Lock retention (read,
	// or inferred from their age and the target's retain=), and left
	// alone without being condemned; LockedBytes are their bytes.
	LockedBlocks int
	LockedBytes  int64
	// VoidedBackups: manifests left unready (their writer stopped between
	// commit and confirm) for MinAge, voided; DeletedManifests: voided
	// manifests deleted (FORMAT.md §7.5). Not counted in a dry run.
	VoidedBackups, DeletedManifests int
	// TempFiles are temporary files of killed writers that a file store
	// (store.TempSweeper) held for longer than the grace MinTempAge (or
	// MinAge, if longer), deleted (or would be, in a dry run), and
	// TempBytes their bytes. Only a gc of every chain sweeps them.
	TempFiles int
	TempBytes int64
}
