// Package durable writes and renames files so that a crash (power loss,
// kernel panic, SIGKILL) leaves a file's old content or its new content,
// never a torn or missing file, and so that a write reported done stays
// done. It is chainvol's one implementation of the pattern; every state
// file, checkpoint, image record, name record, file-store object and
// data-file publish goes through it.
//
// A write (WriteFile, WriteWith, CreateFile) takes five steps:
//
//  1. create a temporary file in the target's directory (so that the
//     commit stays within one filesystem), named TempPattern(base);
//  2. write the data and set the mode (perm, exactly: no umask);
//  3. fsync the temporary file, so its data and size are on disk before
//     any name points at it;
//  4. commit: rename(2) over the target (WriteFile, WriteWith), or
//     link(2) to it and unlink the temporary name (CreateFile: link fails
//     with EEXIST where rename would replace);
//  5. fsync the directory, so the commit itself is on disk: POSIX leaves a
//     rename's durability to the directory's fsync, and XFS and ext4 keep
//     it in memory until their journal is written (TestCrash shows the
//     rename lost without it).
//
// A crash before step 4 leaves the old file (or none) and a temporary file
// that IsTemp recognises; the owners of the directories sweep those
// (volume.sweepState, store.SweepTemps, the name store's load), and
// RemoveTemps removes those of one path. Rename and RenameNoReplace are
// steps 4 and 5 for a file the caller has written and fsynced itself (a
// data file, a restored image); MkdirAll and SyncDir make new directories
// and removals durable.
package durable
