package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// initRow is the outcome of "target init": what was created, then the
// check; JSON field names are stable.
type initRow struct {
	targetRow
	// Created: the bucket (or directory) did not exist and init made it.
	Created bool `json:"created"`
}

func (a *app) newTargetInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init [NAME]",
		Short: "Create a target's S3 bucket (or directory), then check it",
		Long: `Create the bucket an s3:// target names (in the URL's region, us-east-1 when
it names none), or the directory of a file:// target, unless it exists, then
check the target as 'target check' does. NAME is a configured target, the
default one when omitted. Nothing else is written: the first backup of a
chain creates its objects.

When the credentials may not create buckets (a key scoped to one bucket, as
most providers hand out), init says so and exits 1: create the bucket with
your provider's console or CLI, or ask whoever administers the store, then
run 'chainvolctl target check'. An existing bucket the credentials may use
is fine: init then only checks it.`,
		Example: `  chainvolctl --target lab='s3://chainvol-lab/demo?endpoint=127.0.0.1:7070&region=us-east-1&insecure=true' \
      --credentials-file s3.env target init
  chainvolctl --target off='s3://chainvol-offsite?endpoint=10.0.0.5:9000' target init off -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			set, err := a.targetSet()
			if err != nil {
				return err
			}
			name := ""
			if len(argv) == 1 {
				name = argv[0]
			}
			t, err := set.Lookup(name)
			if err != nil {
				return usageError{explain(err)}
			}
			created, err := set.Create(cmd.Context(), t.Name, envSecrets())
			if errors.Is(err, store.ErrAccessDenied) {
				return fmt.Errorf("%w\nhint: these credentials may not create it (or are wrong): create the bucket with your provider's console or CLI (e.g. 'aws s3 mb' or 'mc mb'), or ask the store's administrator; then run 'chainvolctl target check %s'", err, t.Name)
			}
			if err != nil {
				return explain(err)
			}
			r := initRow{targetRow: a.checkTarget(cmd.Context(), set, t.Name), Created: created}
			err = a.emit(cmd, r, func(w io.Writer) error {
				verb := "exists already"
				if created {
					verb = "created"
				}
				if _, err := fmt.Fprintf(w, "target %s: %s %s\n", t.Name, what(t.URL), verb); err != nil {
					return err
				}
				return checkTable(w, r.targetRow)
			})
			if err == nil && r.Error != "" {
				err = fmt.Errorf("target %s was made but fails the check: %s", t.Name, r.Error)
			}
			return err
		}),
	}
}

// what names what init makes for a target URL.
func what(url string) string {
	if _, ok := fileTargetDir(url); ok {
		return "directory"
	}
	return "bucket"
}
