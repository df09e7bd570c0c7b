package volume

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Job is one background backup upload or restore. Its context is detached
// from the request that started it: the CO's call times out long before a
// restore of a large volume ends, and retries find the job by key.
type Job struct {
	what   string // "restore" or "backup", for messages
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
	start  time.Time
	bytes  atomic.Int64
	total  atomic.Int64
	// lastLog is the UnixNano time of the last progress log line.
	lastLog atomic.Int64
	// waiting is why the job is paused until its backup target answers
	// again, nil while it runs (SetWaiting).
	waiting atomic.Pointer[string]
	// gate, when not nil, holds the job back until open is called.
	gate     chan struct{}
	openOnce sync.Once
	// subject is the id of the lvol the job fills or uploads, once known
	// ("" before: a new restore learns it at admission).
	subject atomic.Pointer[string]
	// backup is the backup reference the job restores or uploads, once
	// known (SetBackup), for the shutdown's report.
	backup atomic.Pointer[string]
	// rec publishes the job's progress in STATE_DIR/jobs for `chainvolctl
	// jobs` (nil without a state directory).
	rec *jobrec.Publisher
}

// SetSubject records the id of the lvol the job works on.
func (j *Job) SetSubject(id string) {
	j.subject.Store(&id)
	j.rec.Set("", id)
}

// Subject is the id SetSubject recorded, "" before.
func (j *Job) Subject() string {
	if p := j.subject.Load(); p != nil {
		return *p
	}
	return ""
}

// SetBackup records the backup reference (TARGET:CHAIN@ID) the job
// restores or uploads.
func (j *Job) SetBackup(ref string) {
	j.backup.Store(&ref)
	j.rec.Set(ref, "")
}

// Backup is the reference SetBackup recorded, "" before.
func (j *Job) Backup() string {
	if p := j.backup.Load(); p != nil {
		return *p
	}
	return ""
}

// Open lets a job made by startGated run; later calls do nothing.
func (j *Job) Open() {
	if j.gate != nil {
		j.openOnce.Do(func() { close(j.gate) })
	}
}

// progressLogEvery is how often a running job logs its progress.
const progressLogEvery = 10 * time.Second

// Progress records an engine progress report and logs it now and then, so
// a long restore or upload is visible in the node plugin's log.
func (j *Job) Progress(p s3chain.Progress) {
	j.waiting.Store(nil) // progress: the target answers again
	j.bytes.Store(p.DoneBytes)
	j.total.Store(p.TotalBytes)
	j.rec.Update(p.DoneBytes, p.TotalBytes)
	now := time.Now().UnixNano()
	last := j.lastLog.Load()
	if now-last >= int64(progressLogEvery) && j.lastLog.CompareAndSwap(last, now) {
		klog.InfoS("progress", "job", j.what, "status", j.Message())
	}
}

// Finished reports whether the job ended, and its error.
func (j *Job) Finished() (bool, error) {
	select {
	case <-j.done:
		return true, j.err
	default:
		return false, nil
	}
}

// Message says how far the job is: bytes, percent and rate, and what it
// waits for when paused, for the Aborted answers that the
// external-provisioner shows as PVC events.
func (j *Job) Message() string {
	done, total := j.bytes.Load(), j.total.Load()
	secs := time.Since(j.start).Seconds()
	pct, rate := 0.0, 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if secs > 0 {
		rate = float64(done) / secs
	}
	state := "in progress"
	if w := j.waiting.Load(); w != nil {
		state = "in progress, " + *w
	}
	if total == 0 {
		return fmt.Sprintf("%s %s: reading the backup's manifests, running %s", j.what, state, time.Since(j.start).Round(time.Second))
	}
	return fmt.Sprintf("%s %s: %s of %s (%.0f%%), %s/s, running %s",
		j.what, state, mib(done), mib(total), pct, mib(int64(rate)), time.Since(j.start).Round(time.Second))
}

// SetWaiting marks the job paused for its backup target: its message says
// "waiting for target: CAUSE" and when it tries again, until the next
// progress report.
func (j *Job) SetWaiting(cause error, retryIn time.Duration) {
	w := fmt.Sprintf("waiting for target: %v (next try in %s)", cause, retryIn.Round(100*time.Millisecond))
	j.waiting.Store(&w)
	j.rec.SetWaiting(w)
}

// What names the job in messages ("restore of TARGET:CHAIN@ID", "backup upload").
func (j *Job) What() string { return j.what }

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Err is the job's error once Done is closed: nil when it succeeded,
// context.Canceled when it was stopped.
func (j *Job) Err() error { return j.err }

// Bytes and Total are the bytes done and to do of the last progress
// report; Started is when the job was created.
func (j *Job) Bytes() int64       { return j.bytes.Load() }
func (j *Job) Total() int64       { return j.total.Load() }
func (j *Job) Started() time.Time { return j.start }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// jobSet tracks background jobs by key (a volume or snapshot lvol id).
type jobSet struct {
	// dir is where the jobs' progress records go (jobrec), "" for none.
	dir string
	mu  sync.Mutex
	m   map[string]*Job
	// closed is set by shutdown: no job starts afterwards.
	closed bool
}

func newJobSet(recordDir string) *jobSet { return &jobSet{dir: recordDir, m: map[string]*Job{}} }

// recordKind is the jobrec kind of a job described as what: the driver's
// jobs are restores ("restore of REF") and backup uploads.
func recordKind(what string) string {
	if strings.HasPrefix(what, "restore") {
		return jobrec.KindRestore
	}
	return jobrec.KindBackup
}

// start runs fn in the background under key unless a job with that key
// exists, and returns the job that runs.
func (s *jobSet) start(key, what string, fn func(context.Context, *Job) error) *Job {
	return s.startJob(key, what, nil, fn)
}

// startGated is start for a job that runs fn only once open is called:
// wait opens it when it blocks, and a call that answers without waiting
// opens it after answering, so that its answer does not share the CPU
// with the job's first burst. The caller must see that open is called on
// every path (a deferred open), or the job never runs.
func (s *jobSet) startGated(key, what string, fn func(context.Context, *Job) error) *Job {
	return s.startJob(key, what, make(chan struct{}), fn)
}

func (s *jobSet) startJob(key, what string, gate chan struct{}, fn func(context.Context, *Job) error) *Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.m[key]; ok {
		return j
	}
	if s.closed {
		return refusedJob(what)
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{what: what, cancel: cancel, done: make(chan struct{}), start: time.Now(), gate: gate,
		rec: jobrec.Start(s.dir, jobrec.Record{Kind: recordKind(what), What: what})}
	if err := j.rec.Err(); err != nil {
		klog.V(2).InfoS("progress record not published", "job", what, "err", err)
	}
	j.lastLog.Store(j.start.UnixNano())
	s.m[key] = j
	go func() {
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
		if j.err = ctx.Err(); j.err == nil {
			j.err = fn(ctx, j)
		}
		j.rec.End()
		cancel()
		close(j.done)
	}()
	return j
}

// get returns the job of key, or nil.
func (s *jobSet) get(key string) *Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// running returns the jobs whose key starts with prefix and that have not
// ended.
func (s *jobSet) running(prefix string) []*Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Job
	for k, j := range s.m {
		if ended, _ := j.Finished(); !ended && strings.HasPrefix(k, prefix) {
			out = append(out, j)
		}
	}
	return out
}

// forget drops a finished job so that a later call starts afresh.
func (s *jobSet) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// stop cancels the job of key, if any, waits for it to end and forgets it.
func (s *jobSet) stop(key string) {
	j := s.get(key)
	if j == nil {
		return
	}
	j.cancel()
	<-j.done
	s.forget(key)
}

// stopAll cancels every job and waits for them, so that no restore or
// upload outlives the driver (and its pool) that started it.
func (s *jobSet) stopAll() {
	s.mu.Lock()
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.stop(k)
	}
}

// Wait waits for j to finish or for ctx's deadline less a margin, so that
// the answer reaches the CO before its own timeout. It reports whether j
// ended. A gated job is opened when wait blocks.
func Wait(ctx context.Context, j *Job) bool {
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Second))
		defer cancel()
	}
	if wctx.Err() == nil {
		j.Open()
	}
	select {
	case <-j.done:
		return true
	case <-wctx.Done():
		return false
	}
}
