package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/chainvol/chainvol/internal/tick"
	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// progress shows how far a backup or restore is: a bar with bytes, rate
// and ETA on a terminal, else a plain log line every interval (CI logs,
// journald). The engines call update from many goroutines; one goroutine
// of ours draws, so the bar is never written concurrently.
type progress struct {
	what        string
	w           io.Writer
	interval    time.Duration
	done, total atomic.Int64
	bar         *progressbar.ProgressBar // nil when not a terminal
	json        bool                     // JSON lines (-o json)
	start       time.Time
	rec         *jobrec.Publisher // the job's record for `chainvolctl jobs`; nil for none
	stopTick    func()
}

// jsonProgress selects the JSON progress stream (-o json; set by app.run).
var jsonProgress atomic.Bool

// newProgress starts reporting on stderr, and into rec (which finish
// ends; nil for none); call finish when the work ends. With -o json it
// writes a jsonProgressLine per interval and a final one instead of a bar
// or log lines.
func newProgress(what string, interval time.Duration, rec *jobrec.Publisher) *progress {
	p := &progress{what: what, w: os.Stderr, interval: interval, start: time.Now(),
		json: jsonProgress.Load(), rec: rec}
	every := interval
	if !p.json && term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetDescription(what), progressbar.OptionFullWidth(),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }))
		every = 100 * time.Millisecond
	}
	p.stopTick = tick.Every(every, func() { p.draw(false) })
	return p
}

// update records the engine's progress; it is safe from any goroutine and
// keeps the largest value seen, as reports may arrive out of order.
func (p *progress) update(pr s3chain.Progress) {
	p.total.Store(pr.TotalBytes)
	for {
		cur := p.done.Load()
		if pr.DoneBytes <= cur || p.done.CompareAndSwap(cur, pr.DoneBytes) {
			break
		}
	}
	p.rec.Update(p.done.Load(), pr.TotalBytes)
}

func (p *progress) draw(final bool) {
	done, total := p.done.Load(), p.total.Load()
	if p.bar != nil {
		if total > 0 && p.bar.GetMax64() != total {
			p.bar.ChangeMax64(total)
		}
		_ = p.bar.Set64(done)
		if final {
			_ = p.bar.Finish()
		}
		return
	}
	if total == 0 && !final {
		return
	}
	if p.json {
		p.drawJSON(done, total, final)
		return
	}
	el := time.Since(p.start)
	rate := float64(done) / max(el.Seconds(), 0.001)
	eta := "-"
	if rate > 0 && total > done {
		eta = time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	fmt.Fprintf(p.w, "%s %s: %s / %s (%.0f%%), %s/s, elapsed %s, ETA %s\n", time.Now().Format("15:04:05"), p.what,
		bytesStr(done), bytesStr(total), pct, bytesStr(int64(rate)), el.Round(time.Second), eta)
}

// finish draws the last state and stops the reporter.
func (p *progress) finish() {
	p.stopTick()
	p.draw(true)
	p.rec.End()
}

// jsonProgressLine is one line of the -o json progress stream on stderr.
type jsonProgressLine struct {
	Progress struct {
		What           string  `json:"what"`
		DoneBytes      int64   `json:"doneBytes"`
		TotalBytes     int64   `json:"totalBytes"`
		ElapsedSeconds float64 `json:"elapsedSeconds"`
		BytesPerSecond float64 `json:"bytesPerSecond"`
		Final          bool    `json:"final"`
	} `json:"progress"`
}

func (p *progress) drawJSON(done, total int64, final bool) {
	var l jsonProgressLine
	el := time.Since(p.start).Seconds()
	l.Progress.What, l.Progress.DoneBytes, l.Progress.TotalBytes, l.Progress.Final = p.what, done, total, final
	l.Progress.ElapsedSeconds = math.Round(el*1000) / 1000
	l.Progress.BytesPerSecond = math.Round(float64(done) / max(el, 0.001))
	_ = json.NewEncoder(p.w).Encode(l)
}
