package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole run
// (go tool pprof format). It is for `make bench -profile`, which explains
// a missed goal line with a profile; it is not a user-facing flag, so it is
// an environment variable rather than a flag on every command.
const cpuProfileEnv = "CHAINVOL_CPUPROFILE"

// traceEnv names a file that receives an execution trace of the whole run
// (go tool trace): where a CPU profile shows what runs, the trace shows
// what waits (go tool trace -pprof=net|syscall|sync|sched).
const traceEnv = "CHAINVOL_TRACE"

// startDiagnostics starts what cpuProfileEnv and traceEnv ask for and
// returns the function that stops both.
func startDiagnostics() func() {
	endProfile := startProfile(os.Getenv(cpuProfileEnv))
	endTrace := startTrace(os.Getenv(traceEnv))
	return func() { endTrace(); endProfile() }
}

// startTrace starts an execution trace into path ("" = none), as
// startProfile does a CPU profile.
func startTrace(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = trace.Start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chainvolctl: %s: %v\n", traceEnv, err)
		return func() {}
	}
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			fmt.Fprintf(os.Stderr, "chainvolctl: %s: %v\n", traceEnv, err)
		}
	}
}

// startProfile starts a CPU profile into path ("" = none) and returns the
// function that stops it. A profile that cannot be started is reported on
// stderr and the run goes on: it must not change what the command does.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chainvolctl: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
