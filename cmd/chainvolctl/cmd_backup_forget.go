package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// forgetResult is the outcome of "backup forget"; JSON names are stable.
type forgetResult struct {
	DryRun  bool        `json:"dryRun"`
	Chain   string      `json:"chain"`
	Policy  string      `json:"policy"`
	Backups []forgetRow `json:"backups"`
}

// forgetRow is the verdict on one backup, newest first. Action is "keep",
// "forget" (removed), "would forget" (--dry-run) or "locked" (the policy
// lets it go but Object Lock keeps it until LockedUntil's date).
type forgetRow struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	Action    string    `json:"action"`
	Reasons   []string  `json:"reasons"`
	Locked    string    `json:"locked,omitempty"`
}

func (a *app) newBackupForgetCmd() *cobra.Command {
	var f policyFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "forget [TARGET:]CHAIN --keep-last N [--keep-daily N ...] [--dry-run]",
		Short: "Remove the backups of a chain that a retention policy does not keep",
		Long: `Apply a retention policy to one chain, as restic's forget does, and remove
every backup no rule keeps; the others still restore (docs/FORMAT.md §7).
For chains made outside Kubernetes (chainvolctl backup create); in a
cluster, 'chainvolctl k8s snapshot' applies the same policy to
VolumeSnapshots. Rules (a backup is kept if any rule keeps it):
--keep-last N the newest N; --keep-hourly/-daily/-weekly/-monthly/-yearly N
the newest backup of each of the last N hours, days, ISO weeks, months,
years that have one (in UTC; -1 for all; while counts are left the oldest
backup is kept too, as restic 0.17+ does); --keep-within D every backup
within D of the newest one (not of now: a stopped schedule keeps its last
backups). Ties in time go by id, the greater counting as newer.

A backup under S3 Object Lock retention is not removed before its date: it
is listed as locked, with the date, and the command goes on. --dry-run
removes nothing and says which rule keeps each kept backup. Blocks are
freed by 'chainvolctl gc' afterwards.`,
		Example: "  chainvolctl backup forget lab/disk --keep-last 3 --keep-daily 7 --keep-weekly 4 --dry-run\n" +
			"  chainvolctl backup forget offsite:lab/disk --keep-within 48h --keep-monthly 12",
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error { return a.backupForget(cmd, argv[0], &f, dryRun) }),
	}
	addPolicyFlags(cmd.Flags(), &f)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be removed and why each other backup is kept; remove nothing")
	return cmd
}

func (a *app) backupForget(cmd *cobra.Command, arg string, f *policyFlags, dryRun bool) error {
	p, err := f.policy()
	if err != nil {
		return err
	}
	if p.Empty() {
		return usagef("give at least one --keep-* rule (forget never removes every backup)")
	}
	tgt, chain, err := parseChainArg(arg)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	repo, err := a.openRepo(ctx, tgt)
	if err != nil {
		return err
	}
	ms, err := repo.BackupHeaders(ctx, chain) // ids and times only
	if err != nil {
		return explain(err)
	}
	items := make([]retention.Item, len(ms))
	for i, m := range ms {
		items[i] = retention.Item{ID: m.ID, Time: m.CreatedAt}
	}
	res := forgetResult{DryRun: dryRun, Chain: chain, Policy: p.String(), Backups: []forgetRow{}}
	var errs []error
	for _, d := range retention.Apply(items, p) {
		row := forgetRow{ID: d.ID, CreatedAt: d.Time, Action: "keep", Reasons: append([]string{}, d.Reasons...)}
		switch {
		case d.Keep:
		case dryRun:
			row.Action = "would forget"
		default:
			row.Action = "forget"
			err := repo.DeleteBackup(ctx, chain, d.ID)
			if errors.Is(err, s3chain.ErrRetained) {
				row.Action, row.Locked = "locked", lockedDate(err)
			} else if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
				errs = append(errs, fmt.Errorf("remove %s@%s: %w", chain, d.ID, err))
				row.Action = "failed"
			}
		}
		res.Backups = append(res.Backups, row)
	}
	if err := a.emit(cmd, res, func(w io.Writer) error { return res.text(w) }); err != nil {
		return err
	}
	return explain(errors.Join(errs...))
}

// lockedDate returns the retain-until date an ErrRetained names (its last
// word), for the listing.
func lockedDate(err error) string {
	s := err.Error()
	if i := strings.Index(s, " until "); i >= 0 {
		return strings.TrimRight(strings.Fields(s[i+len(" until "):])[0], ";,.")
	}
	return "?"
}

// text is the human form of a forget result.
func (r forgetResult) text(w io.Writer) error {
	tb := newTable(w, "ID", "CREATED", "ACTION", "WHY")
	for _, b := range r.Backups {
		why := strings.Join(b.Reasons, ", ")
		if b.Locked != "" {
			why = "Object Lock until " + b.Locked
		}
		tb.row(b.ID, timeStr(b.CreatedAt), b.Action, orDash(why))
	}
	if err := tb.flush(); err != nil {
		return err
	}
	if r.DryRun {
		_, err := fmt.Fprintf(w, "dry run (%s): nothing removed\n", r.Policy)
		return err
	}
	_, err := fmt.Fprintf(w, "policy %s applied to %s; run 'chainvolctl gc' to free the blocks\n", r.Policy, r.Chain)
	return err
}
