// Package backend is the node-local store of chainvol's logical volumes
// (lvols): the Pool interface the CSI driver programs against, and FilePool,
// its implementation as a directory of thin-provisioned sparse files with
// metadata in bbolt.
//
// Snapshots and clones are reflinks (FICLONE), so they cost O(1) whatever
// the size; on a filesystem without reflink they fall back to sparse-aware
// full copies. Every mutation is crash-safe: a create makes and fsyncs the
// data file (and its directory) before it commits the ready record; a
// delete marks the record first; a resize grows the file before it records
// the size. Open rolls any interrupted step back or forward and removes
// data files no ready record claims.
//
// What this package must never do:
//   - let an id that does not match IDPattern reach a path or a key: such ids
//     are ErrNotFound before any filesystem call (no "../" escapes);
//   - create, remove or follow anything outside its pool directory, nor
//     remove subdirectories inside it;
//   - show a caller (Get, GetByName, List, DataPath) an lvol whose data file
//     is not whole;
//   - shrink a data file (it would cut the filesystem inside it);
//   - mount, format or interpret the data inside an lvol, or the Labels: that
//     is the driver's business;
//   - return an error the driver cannot classify: failures the caller can act
//     on are the sentinel errors of pool.go, wrapped with %w.
package backend
