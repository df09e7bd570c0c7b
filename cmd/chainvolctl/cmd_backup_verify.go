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

// verifyAllResult is the outcome of "verify --all"; JSON names are stable.
type verifyAllResult struct {
	Target string `json:"target"`
	Deep   bool   `json:"deep"`
	// Chains and Backups count what was verified; SkippedChains the chains
	// the key given does not open (listed in Skipped).
	Chains        int      `json:"chains"`
	SkippedChains int      `json:"skippedChains"`
	Skipped       []string `json:"skipped"`
	Backups       int      `json:"backups"`
	OK            int      `json:"ok"`
	Failed        int      `json:"failed"`
	// Results has one entry per backup, and one with an empty id for a
	// chain whose backups could not be listed.
	Results  []verifyResult `json:"results"`
	Duration float64        `json:"durationSeconds"`
}

// verifyAll verifies every backup of every chain of target f.in, prints a
// line per backup and a summary, and fails if any backup failed.
func (a *app) verifyAll(cmd *cobra.Command, f verifyFlags) error {
	ctx := cmd.Context()
	t, err := a.lookupTarget(f.in)
	if err != nil {
		return err
	}
	repo, err := a.openRepo(ctx, t.Name)
	if err != nil {
		return err
	}
	start := time.Now()
	names, err := repo.Chains(ctx)
	if err != nil {
		return explain(err)
	}
	res := verifyAllResult{Target: t.Name, Deep: f.deep, Skipped: []string{}, Results: []verifyResult{}}
	for _, n := range names {
		if err := verifyChain(ctx, repo, n, f.deep, &res); err != nil {
			return err // the context ended: stop, as every command does
		}
	}
	res.Duration = time.Since(start).Seconds()
	err = a.emit(cmd, res, func(w io.Writer) error { return verifyAllTable(w, res) })
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%d of %d backups in target %s failed verification (listed above)", res.Failed, res.Backups, res.Target)
	}
	return err
}

// verifyChain verifies every backup of chain into res. A chain the key does
// not open is skipped; one whose backups cannot be listed is one failure.
// It returns only ctx's error.
func verifyChain(ctx context.Context, repo *s3chain.Repo, chain string, deep bool, res *verifyAllResult) error {
	ms, err := repo.BackupHeaders(ctx, chain) // ids and times only
	if errors.Is(err, s3chain.ErrWrongKey) {
		res.SkippedChains++
		res.Skipped = append(res.Skipped, chain)
		return nil
	}
	res.Chains++
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res.Failed++
		res.Results = append(res.Results, verifyResult{Chain: chain, Deep: deep, Error: oneLine(explain(err))})
		return nil
	}
	for _, m := range ms {
		t0 := time.Now()
		verr := repo.Verify(ctx, chain, m.ID, deep)
		if verr != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		r := verifyResult{Chain: chain, ID: m.ID, Deep: deep, OK: verr == nil, Duration: time.Since(t0).Seconds()}
		res.Backups++
		if verr != nil {
			r.Error = oneLine(explain(verr))
			res.Failed++
		} else {
			res.OK++
		}
		res.Results = append(res.Results, r)
	}
	return nil
}

// verifyAllTable prints a row per backup and the summary line.
func verifyAllTable(w io.Writer, res verifyAllResult) error {
	tb := newTable(w, "CHAIN", "BACKUP", "RESULT")
	for _, r := range res.Results {
		result := "OK"
		if !r.OK {
			result = "FAILED: " + r.Error
		}
		tb.row(r.Chain, orDash(r.ID), result)
	}
	for _, c := range res.Skipped {
		tb.row(c, "-", "skipped: needs another key, or none")
	}
	if err := tb.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "target %s: %d chains (%d skipped), %d backups: %d OK, %d failed (%s) in %.1fs\n",
		res.Target, res.Chains, res.SkippedChains, res.Backups, res.OK, res.Failed, verifiedWhat(res.Deep), res.Duration)
	return err
}
