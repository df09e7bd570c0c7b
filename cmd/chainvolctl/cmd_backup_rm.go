package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// rmResult is the outcome of "backup rm"; JSON names are stable. The
// counts are there for --dry-run only.
type rmResult struct {
	DryRun  bool        `json:"dryRun"`
	Removed []backupRef `json:"removed"`
	// Locked, with --dry-run, is the retain-until date of a backup under
	// S3 Object Lock retention, which rm would refuse.
	Locked string `json:"locked,omitempty"`
	*rmPreview
}

// backupRef names one backup.
type backupRef struct {
	Chain string `json:"chain"`
	ID    string `json:"id"`
}

// rmPreview is what a gc may free after the removal (s3chain.RemovalStats).
type rmPreview struct {
	FreedBlocks        int   `json:"freedBlocks"`
	FreedBytes         int64 `json:"freedBytes"`
	YoungBlocks        int   `json:"youngBlocks"`
	UnreferencedBlocks int   `json:"unreferencedBlocks"`
	UnreferencedBytes  int64 `json:"unreferencedBytes"`
	EmptiesChain       bool  `json:"emptiesChain"`
}

func (a *app) newBackupRmCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "rm [TARGET:]CHAIN@BACKUP",
		Short: "Remove one backup; every other backup still restores",
		Long: `Remove one backup from its chain. Every backup's manifest lists its whole
volume, so no other backup depends on it, whatever runs at the same time
(docs/FORMAT.md §7). Blocks no longer referenced stay in the target until
'chainvolctl gc' removes them (blocks younger than gc's --min-age, 1h by
default, only once they are older; 'gc --min-age 0' frees them at once).

--dry-run deletes nothing: it names the backup that would go and counts,
from the chain's manifests and its block listing, the blocks (and stored
bytes) only that backup references, which a gc may then free, and the
blocks no backup references already, which a gc frees anyway. A backup
or gc running meanwhile can change the answer. A backup under S3 Object
Lock retention is refused before its date, naming it (--dry-run says so).`,
		Example: "  chainvolctl backup rm demo/data@20261129T101500Z-3f9a0c17 --dry-run\n" +
			"  chainvolctl backup rm demo/data@20261129T101500Z-3f9a0c17\n  chainvolctl gc --min-age 0 --chain demo/data",
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error { return a.backupRm(cmd, argv[0], dryRun) }),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be removed and what gc may then free; delete nothing")
	return cmd
}

func (a *app) backupRm(cmd *cobra.Command, ref string, dryRun bool) error {
	ctx := cmd.Context()
	repo, m, err := a.resolveRef(ctx, ref)
	if err != nil {
		return err
	}
	res := rmResult{DryRun: dryRun, Removed: []backupRef{{Chain: m.Chain, ID: m.ID}}}
	if dryRun {
		st, err := repo.RemovalPreview(ctx, m.Chain, []string{m.ID})
		if err != nil {
			return explain(wrapOp(fmt.Sprintf("preview the removal of %s@%s", m.Chain, m.ID), err))
		}
		res.rmPreview = &rmPreview{FreedBlocks: st.FreedBlocks, FreedBytes: st.FreedBytes, YoungBlocks: st.YoungBlocks,
			UnreferencedBlocks: st.UnreferencedBlocks, UnreferencedBytes: st.UnreferencedBytes, EmptiesChain: st.EmptiesChain}
		if err := repo.Deletable(ctx, m.Chain, m.ID); errors.Is(err, s3chain.ErrRetained) {
			res.Locked = lockedDate(err)
		}
	} else if err := repo.DeleteBackup(ctx, m.Chain, m.ID); err != nil {
		return explain(wrapOp(fmt.Sprintf("remove %s@%s", m.Chain, m.ID), err))
	}
	return a.emit(cmd, res, func(w io.Writer) error { return res.text(w) })
}

// text is the human form of an rm result.
func (r rmResult) text(w io.Writer) error {
	b := r.Removed[0]
	if r.rmPreview == nil {
		_, err := fmt.Fprintf(w, "removed %s@%s; run 'chainvolctl gc' to free its blocks\n", b.Chain, b.ID)
		return err
	}
	p := r.rmPreview
	if r.Locked != "" {
		_, err := fmt.Fprintf(w, "%s@%s is under S3 Object Lock retention until %s: rm would be refused until then (dry run: nothing deleted)\n", b.Chain, b.ID, r.Locked)
		return err
	}
	fmt.Fprintf(w, "would remove %s@%s (dry run: nothing deleted)\n", b.Chain, b.ID)
	fmt.Fprintf(w, "then 'chainvolctl gc --min-age 0' may free %d blocks (%s) that only this backup references", p.FreedBlocks, bytesStr(p.FreedBytes))
	if p.YoungBlocks > 0 {
		fmt.Fprintf(w, " (%d of them younger than %s: a plain 'chainvolctl gc' keeps those until they are older)",
			p.YoungBlocks, shortDuration(s3chain.DefaultGCMinAge))
	}
	fmt.Fprintln(w)
	if p.UnreferencedBlocks > 0 {
		fmt.Fprintf(w, "gc frees %d more blocks (%s) that no backup references already\n", p.UnreferencedBlocks, bytesStr(p.UnreferencedBytes))
	}
	var err error
	if p.EmptiesChain {
		_, err = fmt.Fprintf(w, "it is the last backup of chain %s: the chain then stays, with no backups (a new source may then use it)\n", b.Chain)
	}
	return err
}

// shortDuration is d without its zero minutes and seconds: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}
