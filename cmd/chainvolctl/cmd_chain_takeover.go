package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// takeOverResult is the outcome of "chain take-over"; JSON names are stable.
type takeOverResult struct {
	Chain    string `json:"chain"`
	Owner    string `json:"owner"`
	Previous string `json:"previous"`
}

func (a *app) newChainTakeOverCmd() *cobra.Command {
	var owner, from string
	cmd := &cobra.Command{
		Use:   "take-over [TARGET:]CHAIN (--owner OWNER | --from FILE|DEVICE)",
		Short: "Make a chain the history of another source, for a planned migration",
		Long: `A chain is the history of one source, its owner (docs/FORMAT.md §3.3): the
driver records its cluster ("cluster/ID", -cluster-id), backup create the host
and source path ("host/NAME:PATH"). A backup by another owner is refused. To
continue a chain on purpose from elsewhere (a cluster rebuilt, a disk moved to
another host), take it over: from then on the new owner's backups continue it
and the previous owner's are refused.`,
		Example: "  chainvolctl chain take-over off:shop/db --owner cluster/5f1c0e2a-...\n" +
			"  chainvolctl chain take-over lab/vm1 --from /srv/images/vm1.img",
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			tgt, chain, err := parseChainArg(argv[0])
			if err != nil {
				return err
			}
			if owner == "" && from == "" {
				return usagef("give the new owner: --owner OWNER, or --from the source backup create will read")
			}
			if owner == "" {
				owner = sourceOwner(from)
			}
			repo, err := a.openRepo(cmd.Context(), tgt)
			if err != nil {
				return err
			}
			prev, err := repo.TakeOver(cmd.Context(), chain, owner)
			if err != nil {
				return explain(wrapOp("take over chain "+chain, err))
			}
			res := takeOverResult{Chain: chain, Owner: owner, Previous: prev}
			return a.emit(cmd, res, func(w io.Writer) error {
				if prev == owner {
					_, err := fmt.Fprintf(w, "chain %s already belongs to %s: nothing changed\n", chain, owner)
					return err
				}
				_, err := fmt.Fprintf(w, "chain %s now belongs to %s (before: %s)\n", chain, owner, orDash(prev))
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&owner, "owner", "", "the new owner, as the driver (cluster/ID) or backup create (host/NAME:PATH) records it")
	cmd.Flags().StringVar(&from, "from", "", "the source backup create will read: its default owner on this host")
	return cmd
}
