package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chainvol/chainvol/internal/tick"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

// counts are the tests (and subtests) of a suite by outcome. A package or
// command that fails without a failing test counts as one failure.
type counts struct{ passed, failed, skipped int }

func (c *counts) add(o counts) {
	c.passed += o.passed
	c.failed += o.failed
	c.skipped += o.skipped
}

// verdict is the line CI reads: "NAME: N passed, N failed, N skipped".
func (c counts) verdict(name string) string {
	return fmt.Sprintf("%s: %d passed, %d failed, %d skipped", name, c.passed, c.failed, c.skipped)
}

// maxFailLines bounds the output printed for one failing test.
const maxFailLines = 200

// report follows one suite's events.
type report struct {
	name string
	w    io.Writer

	mu      sync.Mutex // the progress ticker reads what the reader writes
	c       counts
	running map[string]time.Time // package -> start
	done    int                  // packages finished
	pkgC    map[string]*counts   // per package
	output  map[string][]string  // "pkg\x00test" -> output lines, until the test ends
	failedT map[string]bool      // "pkg\x00test" of failed tests, to print leaves only
}

func newReport(name string, w io.Writer) *report {
	return &report{name: name, w: w, running: map[string]time.Time{}, pkgC: map[string]*counts{},
		output: map[string][]string{}, failedT: map[string]bool{}}
}

// ansi matches terminal colour sequences, which Ginkgo may print.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Ginkgo's end-of-suite lines: "Ran 77 of 103 Specs in 95.1 seconds" and
// "SUCCESS! -- 77 Passed | 0 Failed | 1 Pending | 25 Skipped".
var (
	ginkgoRan    = regexp.MustCompile(`^Ran (\d+) of (\d+) Specs`)
	ginkgoCounts = regexp.MustCompile(`(\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped`)
)

func (r *report) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		fmt.Fprintf(r.w, "%s\n", b) // not an event: go vet or build output, a panic
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := e.Package + "\x00" + e.Test
	pc := r.pkgC[e.Package]
	if pc == nil {
		pc = &counts{}
		r.pkgC[e.Package] = pc
	}
	switch e.Action {
	case "start":
		r.running[e.Package] = time.Now()
	case "output":
		r.outputLine(e, key)
	case "build-output":
		fmt.Fprint(r.w, e.Output)
	case "build-fail": // counted by the package's own fail event
		fmt.Fprintf(r.w, "FAIL %s: build failed (output above)\n", e.ImportPath)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.packageDone(e, pc)
			return
		}
		r.testDone(e, key, pc)
	}
}

// outputLine keeps a test's output for its failure report and prints
// Ginkgo's summaries as they come.
func (r *report) outputLine(e event, key string) {
	text := strings.TrimSpace(ansi.ReplaceAllString(e.Output, ""))
	if m := ginkgoRan.FindStringSubmatch(text); m != nil {
		fmt.Fprintf(r.w, "  %s %s: Ginkgo ran %s of %s specs\n", short(e.Package), e.Test, m[1], m[2])
	}
	if m := ginkgoCounts.FindStringSubmatch(text); m != nil {
		fmt.Fprintf(r.w, "  %s %s: Ginkgo %s passed, %s failed, %s pending, %s skipped\n", short(e.Package), e.Test, m[1], m[2], m[3], m[4])
	}
	lines := append(r.output[key], strings.TrimRight(e.Output, "\n"))
	if len(lines) > 4*maxFailLines {
		lines = lines[len(lines)-maxFailLines:]
	}
	r.output[key] = lines
}

// testDone counts a test and prints the output of a failing leaf test (a
// parent fails with its subtests, whose output says why).
func (r *report) testDone(e event, key string, pc *counts) {
	switch e.Action {
	case "pass":
		r.c.passed++
		pc.passed++
	case "skip":
		r.c.skipped++
		pc.skipped++
	case "fail":
		r.c.failed++
		pc.failed++
		r.failedT[key] = true
		if !r.childFailed(key) {
			lines := r.output[key]
			if len(lines) > maxFailLines {
				lines = lines[len(lines)-maxFailLines:]
			}
			fmt.Fprintf(r.w, "--- FAIL %s %s (%.1fs)\n", short(e.Package), e.Test, e.Elapsed)
			for _, l := range lines {
				fmt.Fprintf(r.w, "    %s\n", l)
			}
		}
	}
	delete(r.output, key)
}

func (r *report) childFailed(key string) bool {
	for k := range r.failedT {
		if strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

// packageDone prints one line per package; a failed package with no failed
// test (TestMain, a panic, a timeout) prints its own output and counts once.
func (r *report) packageDone(e event, pc *counts) {
	delete(r.running, e.Package)
	r.done++
	status := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "--  "}[e.Action]
	if e.Action == "fail" && pc.failed == 0 {
		r.c.failed++
		pc.failed++
		for _, l := range r.output[e.Package+"\x00"] {
			fmt.Fprintf(r.w, "    %s\n", l)
		}
	}
	if e.Action == "skip" && pc.passed+pc.failed+pc.skipped == 0 {
		status = "--  " // no test files
	}
	fmt.Fprintf(r.w, "%s %-50s %6.1fs  %d passed, %d failed, %d skipped\n", status, e.Package, e.Elapsed, pc.passed, pc.failed, pc.skipped)
	delete(r.output, e.Package+"\x00")
}

// tick prints a progress line every interval while packages run; the
// returned function stops it.
func (r *report) tick(every time.Duration) func() {
	if every <= 0 {
		return func() {}
	}
	return tick.Every(every, func() {
		if s := r.progress(time.Now()); s != "" {
			fmt.Fprintln(r.w, s)
		}
	})
}

// progress is one line: packages done, counts so far, what still runs.
func (r *report) progress(now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.running) == 0 {
		return ""
	}
	var run []string
	for p, t := range r.running {
		run = append(run, fmt.Sprintf("%s %s", short(p), now.Sub(t).Round(time.Second)))
	}
	sort.Strings(run)
	if len(run) > 4 {
		run = append(run[:4], fmt.Sprintf("%d more", len(run)-4))
	}
	return fmt.Sprintf("... %s: %d packages done, %d passed, %d failed, %d skipped so far; running: %s",
		r.name, r.done, r.c.passed, r.c.failed, r.c.skipped, strings.Join(run, ", "))
}

// short drops the module path from a package path.
func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/chainvol/chainvol/")
}
