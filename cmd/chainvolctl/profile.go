package main

import (
	"fmt"
	"io"
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
	endProfile := startRecorder(cpuProfileEnv, pprof.StartCPUProfile, pprof.StopCPUProfile)
	endTrace := startRecorder(traceEnv, trace.Start, trace.Stop)
	return func() { endTrace(); endProfile() }
}

// startRecorder starts a recorder (start, stop) into the file the
// environment variable env names, and returns the function that stops it
// and closes the file; nothing when env is unset. One that cannot be
// started is reported on stderr and the run goes on: diagnostics must not
// change what the command does.
func startRecorder(env string, start func(io.Writer) error, stop func()) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chainvolctl: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		stop()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "chainvolctl: %s: %v\n", env, err)
		}
	}
}
