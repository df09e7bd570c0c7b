package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Exit codes scripts can rely on (listed in the root command's help).
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3 // s3chain.ErrBackupNotFound: no such backup or chain
	exitWrongKey = 4 // s3chain.ErrWrongKey: the encryption key does not open the chain
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
	switch {
	case errors.As(err, &u) || !a.started:
		return exitUsage
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return exitNotFound
	case errors.Is(err, s3chain.ErrWrongKey):
		return exitWrongKey
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

// nonNegative names the duration flags for which 0 is meaningful (no grace
// period); every other duration (timeouts, intervals) must be positive.
var nonNegative = map[string]bool{"min-age": true}

// checkFlagValues refuses, as usage errors, the values cobra parses but no
// command can use: a zero or negative timeout or interval (a zero ticker
// interval would even panic), a negative --min-age or --workers.
func checkFlagValues(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		switch f.Value.Type() {
		case "duration":
			d, _ := time.ParseDuration(f.Value.String())
			if d < 0 || (d == 0 && !nonNegative[f.Name]) {
				err = usagef("--%s %s must be a positive duration such as 30s or 5m", f.Name, f.Value)
			}
		case "int", "int64":
			if n, _ := strconv.ParseInt(f.Value.String(), 10, 64); f.Name == "workers" && n < 0 {
				err = usagef("--workers %s must be 0 (the default) or more", f.Value)
			}
		}
	})
	return err
}

// wrapOp prefixes err with the operation op ("verify demo/data@b1"), unless
// err already starts with the same verb: the engines name the operation,
// backup and chain themselves ("verify backup ..."), and saying it twice
// ("verify x: verify backup x ...") only makes the message longer.
func wrapOp(op string, err error) error {
	if firstWord(op) == firstWord(err.Error()) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// firstWord is s's first word in lower case, without punctuation.
func firstWord(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return strings.ToLower(strings.Trim(w, `:"'`))
}

// parentCmd makes cmd a command that only groups subcommands, subs
// (groupRunE: its help, or a usage error for an unknown subcommand).
func parentCmd(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.RunE = groupRunE
	cmd.AddCommand(subs...)
	return cmd
}
