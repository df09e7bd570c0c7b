package jobrec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainvol/chainvol/internal/durable"
)

// DirOf is the record directory of a state directory: STATE_DIR/jobs.
func DirOf(stateDir string) string { return filepath.Join(stateDir, "jobs") }

// WriteEvery is the least time between two writes of one record: progress
// reports arrive per block, far more often than anyone reads them.
const WriteEvery = time.Second

// RateWindow is the span BytesPerSecond is measured over: recent enough to
// follow a slowing target, long enough to smooth block-sized steps.
const RateWindow = 10 * time.Second

// sampleEvery spaces the samples kept for the rate, which bounds them
// to RateWindow/sampleEvery.
const sampleEvery = 100 * time.Millisecond

// seq numbers the records of this process.
var seq atomic.Int64

// sample is one progress report, for the rate.
type sample struct {
	at   time.Time
	done int64
}

// Publisher keeps one job's record up to date. A nil *Publisher does
// nothing, so code without a state directory passes nil. Its methods are
// safe for concurrent use. Publishing is best effort: a record that cannot
// be written never fails the job; Err tells why for a log line.
type Publisher struct {
	path string
	mu   sync.Mutex
	rec  Record
	// samples are the reports of the last RateWindow, oldest first.
	samples []sample
	written time.Time
	ended   bool
	err     error
}

// Start publishes r as a new job's record in dir (created if missing,
// mode 0700), filling in ID, Process, PID, ProcStart, StartedAt and
// UpdatedAt. dir "" publishes nothing and returns nil.
func Start(dir string, r Record) *Publisher {
	if dir == "" {
		return nil
	}
	pid := os.Getpid()
	r.ID = fmt.Sprintf("%d-%d", pid, seq.Add(1))
	r.Process, r.PID = filepath.Base(os.Args[0]), pid
	r.ProcStart, _ = procStart(pid)
	r.PIDNamespace = pidNamespace()
	r.StartedAt = time.Now().UTC()
	// The start is the first sample: until RateWindow has passed, the
	// rate is the average since the start.
	p := &Publisher{path: filepath.Join(dir, r.ID+".json"), rec: r, samples: []sample{{time.Now(), 0}}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.err = err
		return p
	}
	p.writeLocked(time.Now())
	return p
}

// Update records a progress report: done of total bytes. The record is
// written when WriteEvery has passed since the last write.
func (p *Publisher) Update(done, total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.rec.DoneBytes, p.rec.TotalBytes, p.rec.Waiting = done, total, ""
	if now.Sub(p.samples[len(p.samples)-1].at) >= sampleEvery {
		p.samples = append(p.samples, sample{now, done})
	}
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= RateWindow {
		p.samples = p.samples[1:]
	}
	if first := p.samples[0]; now.Sub(first.at) > 0 {
		p.rec.BytesPerSecond = float64(done-first.done) / now.Sub(first.at).Seconds()
	}
	if now.Sub(p.written) >= WriteEvery {
		p.writeLocked(now)
	}
}

// Set updates the backup reference and the subject (an empty argument
// keeps the value) and writes the record now.
func (p *Publisher) Set(backup, subject string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if backup != "" {
		p.rec.Backup = backup
	}
	if subject != "" {
		p.rec.Subject = subject
	}
	p.writeLocked(time.Now())
}

// SetWaiting marks the job paused for why (until the next Update) and
// writes the record now.
func (p *Publisher) SetWaiting(why string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rec.Waiting = why
	p.writeLocked(time.Now())
}

// End removes the record; later calls of any method do nothing.
func (p *Publisher) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if err := os.Remove(p.path); err != nil && !os.IsNotExist(err) && p.err == nil {
		p.err = err
	}
}

// Err is the first error writing or removing the record, nil if none.
func (p *Publisher) Err() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// writeLocked replaces the record file: a temporary file in the same
// directory renamed over it, so a reader sees the old record or the new
// one. Nothing is synced: a record outlives no crash that matters (List
// marks it stale). p.mu is held.
func (p *Publisher) writeLocked(now time.Time) {
	if p.ended {
		return
	}
	p.written = now
	p.rec.UpdatedAt = now.UTC()
	data, err := json.Marshal(p.rec)
	if err == nil {
		err = durable.WriteFile(p.path, data, 0o600) // the one atomic write (issue 32)
	}
	if err != nil && p.err == nil {
		p.err = err
	}
}
