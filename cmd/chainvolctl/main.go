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
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:])
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
