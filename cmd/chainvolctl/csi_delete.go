package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// deleteSpec describes one idempotent CSI delete command: its help and the
// RPC it makes for an id with the given secrets.
type deleteSpec struct {
	noun, short, long, example string
	call                       func(ctx context.Context, c *csiClient, id string, secrets map[string]string) error
}

// newCSIDeleteCmd builds "NOUN delete ID" for volumes and snapshots alike.
func (a *app) newCSIDeleteCmd(f *csiFlags, spec deleteSpec) *cobra.Command {
	var s secretFlags
	cmd := &cobra.Command{
		Use:     "delete " + spec.noun + "_ID",
		Short:   spec.short,
		Long:    spec.long,
		Example: spec.example,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			secrets, err := s.load()
			if err != nil {
				return err
			}
			return f.call(cmd.Context(), func(ctx context.Context, c *csiClient) error {
				ctx, cancel := f.withTimeout(ctx)
				defer cancel()
				if err := spec.call(ctx, c, argv[0], secrets); err != nil {
					return explainCSI(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s %s\n", spec.noun, argv[0])
				return nil
			})
		}),
	}
	s.add(cmd.Flags())
	return cmd
}
