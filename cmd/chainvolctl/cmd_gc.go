package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// gcResult is the outcome of "gc"; JSON names are stable.
type gcResult struct {
	DryRun        bool  `json:"dryRun"`
	Chains        int   `json:"chains"`
	SkippedChains int   `json:"skippedChains"`
	Blocks        int   `json:"blocks"`
	DeletedBlocks int   `json:"deletedBlocks"`
	DeletedBytes  int64 `json:"deletedBytes"`
	YoungBlocks   int   `json:"youngBlocks"`
	// OtherKeyChains were not collected: the key given does not open them.
	OtherKeyChains int `json:"otherKeyChains"`
	// TempFiles are killed writers' temporary files of a file target
	// deleted (gc of every chain only), TempBytes their bytes.
	TempFiles int   `json:"tempFiles"`
	TempBytes int64 `json:"tempBytes"`
	// LockedBlocks were unreferenced but under S3 Object Lock retention:
	// left alone until their date; LockedBytes their bytes.
	LockedBlocks int   `json:"lockedBlocks"`
	LockedBytes  int64 `json:"lockedBytes"`
}

func (a *app) newGCCmd() *cobra.Command {
	var o s3chain.GCOptions
	var in string
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete blocks no backup references any more",
		Long: `Garbage-collect a target: delete the block objects that no backup's manifest
references (left by 'backup rm' or by interrupted backups), and in a file
target the temporary files of writers killed mid-write, once older than
max(--min-age, 1h) (not with --chain). Chains with a
backup in progress are skipped, and so are chains the given key does not open
(a target may hold chains under several keys, and unencrypted ones, which a
key does not open either: run gc once per key, and once without).
--dry-run only counts what would go.`,
		Example: "  chainvolctl gc --dry-run\n  chainvolctl gc --in offsite --min-age 1h -o json",
		Args:    args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if o.Chain != "" {
				if err := s3chain.ValidChainName(o.Chain); err != nil {
					return usageError{err}
				}
			}
			st, err := a.gc(ctx, cmd, in, o)
			if err != nil {
				return err
			}
			return a.emit(cmd, gcResult{DryRun: o.DryRun, Chains: st.Chains, SkippedChains: st.SkippedChains,
				Blocks: st.Blocks, DeletedBlocks: st.DeletedBlocks, DeletedBytes: st.DeletedBytes, YoungBlocks: st.YoungBlocks,
				OtherKeyChains: st.OtherKeyChains, TempFiles: st.TempFiles, TempBytes: st.TempBytes,
				LockedBlocks: st.LockedBlocks, LockedBytes: st.LockedBytes}, func(w io.Writer) error {
				verb := "deleted"
				if o.DryRun {
					verb = "would delete"
				}
				_, err := fmt.Fprintf(w, "%d chains (%d skipped: backup in progress), %d blocks: %s %d blocks (%s); %d unreferenced but younger than --min-age\n",
					st.Chains, st.SkippedChains, st.Blocks, verb, st.DeletedBlocks, bytesStr(st.DeletedBytes), st.YoungBlocks)
				if err == nil && st.TempFiles > 0 {
					_, err = fmt.Fprintf(w, "%s %d temporary files of killed writers (%s)\n", verb, st.TempFiles, bytesStr(st.TempBytes))
				}
				if err == nil && st.LockedBlocks > 0 {
					_, err = fmt.Fprintf(w, "%d unreferenced blocks (%s) are under S3 Object Lock retention: left until their date\n", st.LockedBlocks, bytesStr(st.LockedBytes))
				}
				if err == nil && st.OtherKeyChains > 0 {
					_, err = fmt.Fprintf(w, "%d chains that need another key (or none) were left alone: run gc with their key (or without one) too\n", st.OtherKeyChains)
				}
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "count what would be deleted, delete nothing")
	f.StringVar(&o.Chain, "chain", "", "collect only this chain")
	f.DurationVar(&o.MinAge, "min-age", s3chain.DefaultGCMinAge, "keep unreferenced blocks younger than this (blocks of running backups are protected by their locks regardless; the grace covers writers of chain format 1)")
	f.StringVar(&in, "in", "", "target name (default: the first configured target)")
	return cmd
}

// gc collects target in; an empty file target has nothing to collect.
func (a *app) gc(ctx context.Context, cmd *cobra.Command, in string, o s3chain.GCOptions) (s3chain.GCStats, error) {
	if note, empty := a.emptyTarget(in); empty {
		fmt.Fprintln(cmd.ErrOrStderr(), note)
		return s3chain.GCStats{}, nil
	}
	repo, err := a.openRepo(ctx, in)
	if err != nil {
		return s3chain.GCStats{}, err
	}
	st, err := repo.GC(ctx, o)
	if err != nil {
		return st, explain(wrapOp(fmt.Sprintf("gc of %s", repo.Store()), err))
	}
	return st, nil
}
