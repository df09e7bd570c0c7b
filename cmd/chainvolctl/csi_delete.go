package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deleteSpec describes one idempotent CSI delete command: its help (noun
// names the object in the answer, arg its id in the usage), flags of its
// own if any, and the RPC it makes for an id with the given secrets.
type deleteSpec struct {
	noun, arg, short, long, example string
	flags                           func(*pflag.FlagSet)
	call                            func(ctx context.Context, c *csiClient, id string, secrets map[string]string) error
}

// newCSIDeleteCmd builds "NOUN delete ID" for volumes, snapshots and groups.
func (a *app) newCSIDeleteCmd(f *csiFlags, spec deleteSpec) *cobra.Command {
	var s secretFlags
	cmd := &cobra.Command{
		Use:     "delete " + spec.arg,
		Short:   spec.short,
		Long:    spec.long,
		Example: spec.example,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			secrets, err := s.load()
			if err != nil {
				return "", err
			}
			if err := spec.call(ctx, c, id, secrets); err != nil {
				return "", explainCSI(err)
			}
			return "deleted " + spec.noun + " " + id, nil
		}),
	}
	s.add(cmd.Flags())
	if spec.flags != nil {
		spec.flags(cmd.Flags())
	}
	return cmd
}
