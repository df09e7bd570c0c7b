package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// verifyResult is the outcome of "backup verify"; JSON names are stable.
type verifyResult struct {
	Chain    string  `json:"chain"`
	ID       string  `json:"id"`
	Deep     bool    `json:"deep"`
	OK       bool    `json:"ok"`
	Error    string  `json:"error,omitempty"`
	Duration float64 `json:"durationSeconds"`
}

func (a *app) newBackupVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify ([TARGET:]CHAIN@BACKUP | --all [--in TARGET])",
		Short: "Check a backup's manifest and blocks, or every backup of a target (--all; --deep: download every block)",
		Long: `Check that a backup can be restored: its manifest (and, for a backup made by
format version 1, those of its parents) exists, is authentic (MAC), adds up to
its volume digest, and every block it needs exists. With --deep every block is also downloaded, decoded and its
digest checked, and the volume digest recomputed: it reads the whole backup.
With --all, every backup of every chain of a target (the default one unless
--in NAME) is checked the same way and a summary printed: chains, backups, how
many are OK and which failed, with why. Chains the key given does not open are
counted as skipped. Exits 1 if anything is wrong.`,
		Example: `  chainvolctl backup verify demo/data@latest
  chainvolctl backup verify offsite:demo/data@20261129T101500Z-3f9a0c17 --deep -o json
  chainvolctl verify --all --in offsite --deep`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			switch {
			case f.all:
				return cobra.NoArgs(cmd, argv)
			case len(argv) == 0:
				return errors.New("name a backup, [TARGET:]CHAIN@BACKUP, or give --all for every backup of the target")
			}
			return cobra.ExactArgs(1)(cmd, argv)
		}),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			if f.all {
				return a.verifyAll(cmd, f)
			}
			if f.in != "" {
				return usagef("--in goes with --all; name one backup as TARGET:CHAIN@BACKUP")
			}
			return a.verifyOne(cmd, argv[0], f.deep)
		}),
	}
	cmd.Flags().BoolVar(&f.deep, "deep", false, "download and check every block (reads the whole backup)")
	cmd.Flags().BoolVar(&f.all, "all", false, "verify every backup of every chain of the target")
	cmd.Flags().StringVar(&f.in, "in", "", "with --all: target name (default: the first configured target)")
	return cmd
}

// verifyFlags are the flags of "backup verify".
type verifyFlags struct {
	deep, all bool
	in        string
}

// verifyOne verifies the backup ref names and prints the outcome.
func (a *app) verifyOne(cmd *cobra.Command, ref string, deep bool) error {
	ctx := cmd.Context()
	repo, m, err := a.resolveRef(ctx, ref)
	if err != nil {
		return err
	}
	start := time.Now()
	verr := repo.Verify(ctx, m.Chain, m.ID, deep)
	res := verifyResult{Chain: m.Chain, ID: m.ID, Deep: deep, OK: verr == nil, Duration: time.Since(start).Seconds()}
	if verr != nil {
		res.Error = verr.Error()
	}
	err = a.emit(cmd, res, func(w io.Writer) error {
		if verr != nil {
			return nil // the error itself is printed on stderr
		}
		_, err := fmt.Fprintf(w, "OK: %s@%s: %s verified in %.1fs\n", m.Chain, m.ID, verifiedWhat(deep), res.Duration)
		return err
	})
	if verr != nil {
		return a.explainCorrupt(ctx, repo, m, wrapOp(fmt.Sprintf("verify %s@%s", m.Chain, m.ID), verr))
	}
	return err
}

// verifiedWhat says what a verify checked.
func verifiedWhat(deep bool) string {
	if deep {
		return "manifest and every block's content"
	}
	return "manifest and blocks present"
}

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
