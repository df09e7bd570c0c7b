package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

func (a *app) newChainCmd() *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "chain",
		Short: "List the backup chains in a target",
		Long: `A chain is the sequence of backups of one volume. Each backup uploads only
what changed since its parent, and its manifest lists the whole volume, so it
restores on its own. The driver names a volume's chain NAMESPACE/PVC when the
provisioner passes PVC metadata, else _volume/NAME after the CSI volume name
(docs/FORMAT.md §1).`,
		Example: "  chainvolctl chain ls\n  chainvolctl chain ls --in offsite -o json",
	}, a.newChainLsCmd(), a.newChainTakeOverCmd())
}

// chainRow summarises one chain; JSON field names are stable.
type chainRow struct {
	Name         string `json:"name"`
	Backups      int    `json:"backups"`
	Latest       string `json:"latest,omitempty"`
	LatestTime   string `json:"latestTime,omitempty"`
	SizeBytes    int64  `json:"sizeBytes"`
	StoredBytes  int64  `json:"storedBytes"`
	BlockSize    int64  `json:"blockSize,omitempty"`
	FSType       string `json:"fsType,omitempty"`
	SourceVolume string `json:"sourceVolume,omitempty"`
	// Owner is the source the chain is the history of (docs/FORMAT.md §3.3).
	Owner string `json:"owner,omitempty"`
	// Unreadable says why the chain's backups were not read (another key).
	Unreadable string `json:"unreadable,omitempty"`
}

var chainHeader = []string{"CHAIN", "BACKUPS", "LATEST", "CREATED", "SIZE", "STORED", "FSTYPE"}

func (a *app) newChainLsCmd() *cobra.Command {
	var in string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List chains with their backup count, newest backup and stored size",
		Long: `List every chain of a target (the default one unless --in NAME) with the
number of backups, the newest, the volume size and the bytes stored by all its
backups. It reads every manifest, so it takes a moment on a large target.`,
		Example: "  chainvolctl chain ls\n  chainvolctl chain ls --in offsite -o json | jq -r '.[].name'",
		Args:    args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rows := []chainRow{}
			if note, empty := a.emptyTarget(in); empty {
				fmt.Fprintln(cmd.ErrOrStderr(), note) // an empty listing, not an error
				return a.emit(cmd, rows, func(w io.Writer) error { return newTable(w, chainHeader...).flush() })
			}
			repo, err := a.openRepo(ctx, in)
			if err != nil {
				return err
			}
			names, err := repo.Chains(ctx)
			if err != nil {
				return explain(err)
			}
			for _, n := range names {
				ms, err := repo.Backups(ctx, n)
				if errors.Is(err, s3chain.ErrWrongKey) {
					// Another key's chain (or a plain one while a key is given,
					// or the reverse): listed, not read; one bucket may hold
					// chains under several keys.
					rows = append(rows, chainRow{Name: n, Unreadable: "needs another key, or none"})
					continue
				}
				if err != nil {
					return explain(wrapOp("list backups of chain "+n, err))
				}
				r := chainRow{Name: n, Backups: len(ms)}
				if r.Owner, err = repo.Owner(ctx, n); err != nil {
					return explain(wrapOp("read the owner of chain "+n, err))
				}
				for _, m := range ms {
					r.StoredBytes += m.StoredBytes
				}
				if len(ms) > 0 {
					l := ms[len(ms)-1]
					r.Latest, r.LatestTime, r.SizeBytes, r.BlockSize = l.ID, timeStr(l.CreatedAt), l.SizeBytes, l.BlockSize
					r.FSType, r.SourceVolume = l.FSType, l.SourceVolume
				}
				rows = append(rows, r)
			}
			return a.emit(cmd, rows, func(w io.Writer) error {
				tb := newTable(w, chainHeader...)
				for _, r := range rows {
					if r.Unreadable != "" {
						tb.row(r.Name, "?", "("+r.Unreadable+")", "-", "-", "-", "-")
						continue
					}
					tb.row(r.Name, fmt.Sprint(r.Backups), orDash(r.Latest), orDash(r.LatestTime),
						bytesStr(r.SizeBytes), bytesStr(r.StoredBytes), orDash(r.FSType))
				}
				return tb.flush()
			})
		}),
	}
	cmd.Flags().StringVar(&in, "in", "", "target name (default: the first configured target)")
	return cmd
}
