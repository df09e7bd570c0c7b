package jobrec

import (
	"time"
)

// Kinds of job.
const (
	KindBackup  = "backup"
	KindRestore = "restore"
	KindGC      = "gc"
)

// Record is one job's published state; the JSON field names are stable
// (`chainvolctl jobs -o json` prints them, with the fields List adds).
type Record struct {
	// ID is the record's file name without ".json": PID-SEQ.
	ID string `json:"id"`
	// Kind is KindBackup, KindRestore or KindGC.
	Kind string `json:"kind"`
	// What describes the job for people ("restore of s3:demo/data@ID").
	What string `json:"what"`
	// Backup is the backup the job writes or reads, TARGET:CHAIN@ID (the id
	// once known), or TARGET:CHAIN for a gc.
	Backup string `json:"backup,omitempty"`
	// Subject is what the job reads or fills on this node: an lvol id
	// (driver) or a path (chainvolctl); "" when not known yet.
	Subject string `json:"subject,omitempty"`
	// Process is the publishing program's name; PID its process id and
	// ProcStart its start time (clock ticks after boot, /proc/PID/stat
	// field 22), which tells a reused PID apart.
	Process   string `json:"process"`
	PID       int    `json:"pid"`
	ProcStart uint64 `json:"procStart"`
	// PIDNamespace is the publisher's PID namespace (/proc/self/ns/pid,
	// "pid:[INODE]"): PID means something only to a reader in the same one
	// (the driver's container, not the host).
	PIDNamespace string `json:"pidNamespace,omitempty"`
	// StartedAt is when the job started; UpdatedAt when this record was
	// written (UTC).
	StartedAt time.Time `json:"startedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// DoneBytes and TotalBytes are the bytes done and to do (0 and 0 until
	// the job knows its size, and for a gc).
	DoneBytes  int64 `json:"doneBytes"`
	TotalBytes int64 `json:"totalBytes"`
	// BytesPerSecond is the rate over the last RateWindow (0 before two
	// reports).
	BytesPerSecond float64 `json:"bytesPerSecond"`
	// Waiting says why the job is paused (its target does not answer), ""
	// while it runs.
	Waiting string `json:"waiting,omitempty"`
}

// Percent is DoneBytes of TotalBytes in percent, 0 while the size is
// unknown.
func (r Record) Percent() float64 {
	if r.TotalBytes <= 0 {
		return 0
	}
	return 100 * float64(r.DoneBytes) / float64(r.TotalBytes)
}

// ETA is the time left at BytesPerSecond, and false when it cannot be told
// (no size or no rate yet).
func (r Record) ETA() (time.Duration, bool) {
	if r.TotalBytes <= 0 || r.BytesPerSecond <= 0 {
		return 0, false
	}
	left := float64(max(r.TotalBytes-r.DoneBytes, 0))
	return time.Duration(left / r.BytesPerSecond * float64(time.Second)), true
}
