// Command testreport runs test suites that print `go test -json` and turns
// their event streams into what a person (and CI) wants to read: a line per
// finished package, the output of each failing test, the Ginkgo summaries of
// suites that run Ginkgo (the CSI sanity suite), a progress line every
// -progress while packages run, and verdict lines of the form
//
//	unit: 812 passed, 0 failed, 31 skipped
//
// per suite and, with -total NAME, over all suites last. Every suite runs
// even when an earlier one fails; the exit code is 1 when any test, package
// or command failed, else 0.
//
// Usage (see the Makefile):
//
//	testreport [-total test] [-progress 30s] -suite 'unit=go test -json -race ./pkg/...' -suite ...
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// suiteFlags collects repeated -suite NAME=COMMAND flags.
type suiteFlags []suite

type suite struct{ name, command string }

func (s *suiteFlags) String() string { return fmt.Sprint(*s) }

func (s *suiteFlags) Set(v string) error {
	name, cmd, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.TrimSpace(cmd) == "" {
		return fmt.Errorf("-suite %q must be NAME=COMMAND", v)
	}
	*s = append(*s, suite{name, cmd})
	return nil
}

func main() {
	var suites suiteFlags
	flag.Var(&suites, "suite", "NAME=COMMAND: a command printing go test -json on stdout (split on spaces, no shell); repeatable")
	total := flag.String("total", "", "print a verdict over all suites under this name, last")
	every := flag.Duration("progress", 30*time.Second, "interval of progress lines while packages run (0: none)")
	flag.Parse()
	if len(suites) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: testreport [-total NAME] [-progress 30s] -suite NAME=COMMAND ...")
		os.Exit(2)
	}
	var sum counts
	for _, s := range suites {
		c := runSuite(s, *every)
		sum.add(c)
	}
	if *total != "" {
		fmt.Println(sum.verdict(*total))
	}
	if sum.failed > 0 {
		os.Exit(1)
	}
}

// runSuite runs one suite's command and reports its events on stdout.
func runSuite(s suite, every time.Duration) counts {
	fmt.Printf("=== %s: %s\n", s.name, s.command)
	start := time.Now()
	args := strings.Fields(s.command)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	r := newReport(s.name, os.Stdout)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Printf("%s: cannot run %q: %v\n", s.name, s.command, err)
		r.c.failed++
		fmt.Println(r.c.verdict(s.name))
		return r.c
	}
	stop := r.tick(every)
	r.read(out)
	stop()
	if err := cmd.Wait(); err != nil && r.c.failed == 0 {
		// A build error, a panic outside a test, a timeout: not a test's
		// failure, but the suite did not pass.
		fmt.Printf("%s: %q exited with %v and no test failed: see the output above\n", s.name, s.command, err)
		r.c.failed++
	}
	fmt.Printf("%s (%s)\n", r.c.verdict(s.name), time.Since(start).Round(time.Second))
	return r.c
}

// read consumes the event stream; lines that are not events are printed.
func (r *report) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		r.line(sc.Bytes())
	}
}
