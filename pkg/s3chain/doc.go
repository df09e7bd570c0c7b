// Package s3chain stores the backups of chainvol volumes in an object store
// (S3 or a local directory) as chains, and restores them.
//
// A chain is the backup lineage of one volume. Each backup is a manifest
// plus content-addressed blocks (4 MiB by default, fixed per chain). A
// backup reads and uploads only what changed since its parent, but its
// manifest lists the whole volume image, so it restores on its own whatever
// happens to other backups. The format and the protocol that makes any
// number of concurrent writers safe (locks as leases, create-if-absent
// commits, gc exclusion) are specified in docs/FORMAT.md; FormatVersion is
// checked by every reader, which also reads version-1 and 2 chains.
//
// The engines:
//   - Repo.Backup reads a read-only snapshot. On a reflink file system it
//     finds changed blocks by comparing the FIEMAP extents of the snapshot
//     and the parent's snapshot, so an incremental backup reads only what
//     changed; otherwise it compares block digests with the parent. Holes
//     (SEEK_DATA/SEEK_HOLE) and zero blocks are never uploaded; blocks are
//     named by a keyed digest, deduplicated, zstd-compressed, optionally
//     sealed with AES-256-GCM, and uploaded in parallel.
//   - Repo.Restore verifies the whole chain before writing anything, fetches
//     each needed block once with bounded memory, checks every digest and
//     the volume digest, leaves zero blocks as holes, and can resume from a
//     checkpoint.
//   - Repo.DeleteBackup deletes a manifest (a version-1 backup others depend
//     on gets a tombstone); Repo.GC removes blocks no manifest references,
//     never while a backup holds the chain.
//
// What this package must never do: write a restore destination before the
// chain it restores from has been verified; upload a manifest before all of
// its blocks are stored, or report a backup whose lease lapsed; overwrite a
// manifest or config; delete a block that a manifest, or a backup in progress,
// may reference; read an object without a size bound; log or store the
// encryption key.
//
// The object store underneath, where the chains' objects live (the Store
// interface, its S3 and local directory implementations, retries, target
// URLs), is package pkg/s3chain/store; its errors (store.ErrTransient, ...)
// pass through wrapped. Engine errors are the sentinels in errors.go.
package s3chain
