// Command chainvolctl is chainvol's operator CLI: it lists, verifies,
// prunes and garbage-collects the backup chains in a backup target, backs up
// and restores disk images without Kubernetes (bare-metal recovery), and
// talks to a node's CSI socket for debugging.
//
// Exit codes: 0 success, 1 failure, 2 usage error (bad flag, argument or
// command), 3 not found (no such backup or chain), 4 wrong encryption key,
// so that scripts can tell a typo from a missing or a broken backup.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	endDiagnostics := startDiagnostics()
	code := execute(ctx, os.Args[1:])
	endDiagnostics()
	stop()
	os.Exit(code)
}

// execute runs the command line and returns the process exit code.
func execute(ctx context.Context, args []string) int {
	a := &app{}
	root := a.newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	err = interrupted(ctx, err)
	code := a.exitCode(err)
	if a.output == "json" {
		writeJSONError(os.Stderr, err, code)
		return code
	}
	fmt.Fprintf(os.Stderr, "Error: %v\n", err)
	if code == exitUsage {
		fmt.Fprintln(os.Stderr, "Run 'chainvolctl --help' (or COMMAND --help) for usage.")
	}
	return code
}

// interruptedError is an error of a run stopped by a signal, told in the
// words of the operator who pressed Ctrl-C.
type interruptedError struct {
	msg string
	err error
}

func (e interruptedError) Error() string { return e.msg }
func (e interruptedError) Unwrap() error { return e.err }

// interrupted rewrites err when ctx was cancelled by a signal
// (signal.NotifyContext's cause): the engines report the cancellation as
// "context canceled", which reads like a bug; it becomes "interrupted
// (interrupt signal received)". Other errors, and the exit code, stay.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	words := "interrupted"
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled { // a signal's cause names it
		words = fmt.Sprintf("interrupted (%v)", cause)
	}
	return interruptedError{strings.ReplaceAll(err.Error(), context.Canceled.Error(), words), err}
}
