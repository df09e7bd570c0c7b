// Package jobrec publishes the progress of the backups, restores and gcs
// running on a node as small JSON records in a directory, STATE_DIR/jobs:
// one file per job, written when it starts, replaced (write to a temporary
// file, rename) at most once a second while it runs, and removed when it
// ends. The driver (its background restores, backup uploads and gcs) and
// chainvolctl (backup create, restore) publish there; `chainvolctl jobs`
// reads the directory, so it needs neither the driver's socket nor its
// metrics endpoint, and a reader never sees a half-written record.
//
// A process killed mid-job leaves its record behind; List marks it Stale
// (the process that wrote it, told by its PID and its start time, is gone)
// and Sweep removes such records.
package jobrec
