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

// writeFile is the one atomic write (issue 32); a variable so that a test
// can hold a write and see that no caller waits for it.
var writeFile = durable.WriteFile

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
	written time.Time // when a write was last asked for
	ended   bool
	err     error
	// kick asks the writer goroutine for a write of the record as it is
	// then; the channel sent, if not nil, is closed once it is written.
	kick    chan chan struct{}
	quit    chan struct{} // closed by End
	stopped chan struct{} // closed when the writer has returned
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
	p := &Publisher{path: filepath.Join(dir, r.ID+".json"), rec: r, samples: []sample{{time.Now(), 0}},
		kick: make(chan chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.err = err
	}
	p.written = time.Now()
	p.writeOnce() // before Start returns, so the job is listed at once
	go p.writer()
	return p
}

// Update records a progress report: done of total bytes. The record is
// written, by the writer goroutine and never while Update waits, when
// WriteEvery has passed since the last write was asked for.
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
		p.written = now
		select {
		case p.kick <- nil:
		default: // a write is already asked for: it takes these values
		}
	}
}

// Set updates the backup reference and the subject (an empty argument
// keeps the value) and writes the record now.
func (p *Publisher) Set(backup, subject string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if backup != "" {
		p.rec.Backup = backup
	}
	if subject != "" {
		p.rec.Subject = subject
	}
	p.mu.Unlock()
	p.writeNow()
}

// SetWaiting marks the job paused for why (until the next Update) and
// writes the record now.
func (p *Publisher) SetWaiting(why string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.rec.Waiting = why
	p.mu.Unlock()
	p.writeNow()
}

// End removes the record; later calls of any method do nothing.
func (p *Publisher) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	p.mu.Unlock()
	close(p.quit)
	<-p.stopped // no write after the removal
	if err := os.Remove(p.path); err != nil && !os.IsNotExist(err) {
		p.setErr(err)
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

// writer writes the record whenever asked, until End. The writes are
// the one atomic write (durable.WriteFile, which fsyncs): off the callers'
// path, since an fsync can wait seconds for the writeback of everything
// else on its filesystem, and Update is called by every restore worker
// for every block (a restore writing onto that filesystem stalled on it).
func (p *Publisher) writer() {
	defer close(p.stopped)
	for {
		select {
		case done := <-p.kick:
			p.writeOnce()
			if done != nil {
				close(done)
			}
		case <-p.quit:
			return
		}
	}
}

// writeNow asks the writer for a write and waits until it is done (or
// the record ended).
func (p *Publisher) writeNow() {
	done := make(chan struct{})
	select {
	case p.kick <- done:
	case <-p.stopped:
		return
	}
	select {
	case <-done:
	case <-p.stopped:
	}
}

// writeOnce replaces the record file with the record as it is now: a
// temporary file in the same directory renamed over it, so a reader sees
// the old record or the new one. Only the writer (or Start, before it
// runs) calls it, so writes never overtake one another.
func (p *Publisher) writeOnce() {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.rec.UpdatedAt = time.Now().UTC()
	data, err := json.Marshal(p.rec)
	p.mu.Unlock()
	if err == nil {
		err = writeFile(p.path, data, 0o600)
	}
	if err != nil {
		p.setErr(err)
	}
}

// setErr keeps the first error.
func (p *Publisher) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}
