package volume

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrStopping is the error of a job refused because the driver is
// stopping (Manager.Shutdown has begun). It wraps context.Canceled, so
// every caller treats it as a cancellation: nothing is recorded, and the
// CO's retry after the restart starts the job afresh.
var ErrStopping = fmt.Errorf("the driver is stopping: %w", context.Canceled)

// Job states in a JobReport.
const (
	// JobStopped: cancelled by the shutdown; it resumes on the next start
	// as after a crash (a restore from its checkpoint, an upload retried
	// under its backup id by the CO's next CreateSnapshot).
	JobStopped = "stopped"
	// JobFinished: it ended on its own during the shutdown.
	JobFinished = "finished"
	// JobFailed: it ended with an error other than its cancellation.
	JobFailed = "failed"
	// JobStillRunning: it had not returned when the shutdown's bound ran
	// out; what it held (a chain lease) lapses with its TTL.
	JobStillRunning = "still running"
)

// JobReport is what Shutdown says of one job that was running.
type JobReport struct {
	Key    string // the job's key: a snapshot id, or "restore:NAME"
	What   string // "backup upload", "restore of TARGET:CHAIN@ID"
	Volume string // the lvol it fills or uploads ("" before admission)
	Backup string // the backup it restores or uploads ("" before known)
	State  string // JobStopped, JobFinished, JobFailed, JobStillRunning
	Err    error  // the job's error when State is JobFailed
}

// Shutdown stops the node's jobs for a driver that exits: no job starts
// afterwards (StartJob returns one that ended with ErrStopping), every
// running job is cancelled, and Shutdown waits until each has returned
// (its chain lease deleted by s3chain's deferred release, its restore
// checkpoint flushed) or ctx ends. It reports every job that was running,
// in key order.
func (m *Manager) Shutdown(ctx context.Context) []JobReport { return m.jobs.shutdown(ctx) }

// refusedJob is a job that ended before it ran, with ErrStopping.
func refusedJob(what string) *Job {
	j := &Job{what: what, cancel: func() {}, done: make(chan struct{}), start: time.Now(), err: ErrStopping}
	close(j.done)
	return j
}

// shutdown closes the set, cancels its running jobs and waits for them
// while ctx allows; see Manager.Shutdown.
func (s *jobSet) shutdown(ctx context.Context) []JobReport {
	s.mu.Lock()
	s.closed = true
	running := map[string]*Job{}
	for k, j := range s.m {
		if ended, _ := j.Finished(); !ended {
			running[k] = j
			j.cancel()
		}
	}
	s.mu.Unlock()
	out := make([]JobReport, 0, len(running))
	for k, j := range running {
		select {
		case <-j.done:
		case <-ctx.Done():
		}
		out = append(out, report(k, j))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out
}

// report describes job j of key k as it is now.
func report(k string, j *Job) JobReport {
	r := JobReport{Key: k, What: j.what, Volume: j.Subject(), Backup: j.Backup(), State: JobStillRunning}
	if ended, err := j.Finished(); ended {
		switch {
		case err == nil:
			r.State = JobFinished
		case errors.Is(err, context.Canceled):
			r.State = JobStopped
		default:
			r.State, r.Err = JobFailed, err
		}
	}
	return r
}

// cancelled returns err as a cancellation once ctx is done: a store
// request cut by the cancel may fail with an error that does not wrap
// ctx's (a reset connection), and the caller must not record that as the
// job's failure (an upload would be marked failed instead of resumed).
func cancelled(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}
