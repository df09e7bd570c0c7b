package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks a mistake on the command line (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usage error with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode classifies an error from Execute. Cobra reports bad flags,
// arguments and missing required flags before any RunE starts; every such
// error is a usage error, whatever its type (cobra's errors are plain).
func (a *app) exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || !a.started {
		return exitUsage
	}
	return exitFailure
}

// args wraps a cobra argument validator so that its error is a usage error.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return usagef("%v (usage: %s)", err, cmd.UseLine())
		}
		return nil
	}
}

// groupRunE is the RunE of a command that only groups subcommands: with no
// argument it shows help; an unknown subcommand is a usage error (cobra
// would otherwise print help and exit 0 for a typo).
func groupRunE(cmd *cobra.Command, a []string) error {
	if len(a) == 0 {
		return cmd.Help()
	}
	return usagef("unknown command %q for %q", a[0], cmd.CommandPath())
}
