package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole run
// (go tool pprof format). It is for `make bench -profile`, which explains
// a missed goal line with a profile; it is not a user-facing flag, so it is
// an environment variable rather than a flag on every command.
const cpuProfileEnv = "CHAINVOL_CPUPROFILE"

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
