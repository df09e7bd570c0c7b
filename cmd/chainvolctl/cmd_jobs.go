package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/jobrec"
)

// jobRow is one job of "jobs -o json": the published record (pkg/jobrec,
// its stable field names) and what is computed from it.
type jobRow struct {
	jobrec.Listed
	Percent        float64 `json:"percent"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// ETASeconds is the time left at the current rate; absent while it
	// cannot be told (no size or no rate yet, a gc).
	ETASeconds *float64 `json:"etaSeconds,omitempty"`
	// State is running, waiting (its target does not answer) or stale
	// (its process is gone: the job is not running).
	State string `json:"state"`
}

func (a *app) newJobsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "jobs",
		Aliases: []string{"status"},
		Short:   "Show the backups, restores and gcs running on this node, with progress, rate and ETA",
		Long: `Show the backups, restores and gcs running on this node: the driver's (the
restores of new volumes, the uploads of backup snapshots, the gcs after backup
deletions) and chainvolctl's own 'backup create' and 'restore', with bytes
done, percent, rate (over the last 10 s), ETA and how long each has run.

Every job publishes a small record in STATE_DIR/jobs/, updated once a second
and removed when it ends; this command only reads them (no socket, nothing
contacted). Give the driver's --state-dir when it is not the default
/var/lib/chainvol. A job whose process was killed left its record behind and
is shown as stale; the driver removes such records when it starts.`,
		Example: `  chainvolctl jobs
  kubectl -n chainvol-system exec POD -c chainvol-csi -- chainvolctl jobs -o json
  watch chainvolctl --state-dir /mnt/state jobs`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			recs, err := jobrec.List(jobrec.DirOf(a.stateDir))
			if err != nil {
				return err
			}
			rows := []jobRow{}
			now := time.Now()
			for _, r := range recs {
				rows = append(rows, newJobRow(r, now))
			}
			return a.emit(cmd, rows, func(w io.Writer) error { return jobsTable(w, rows) })
		}),
	}
}

// newJobRow computes a record's row as of now.
func newJobRow(r jobrec.Listed, now time.Time) jobRow {
	row := jobRow{Listed: r, Percent: r.Percent(), ElapsedSeconds: now.Sub(r.StartedAt).Seconds(), State: "running"}
	if eta, ok := r.ETA(); ok {
		s := eta.Seconds()
		row.ETASeconds = &s
	}
	switch {
	case r.Stale:
		row.State, row.ETASeconds = "stale", nil
	case r.Waiting != "":
		row.State = "waiting"
	}
	return row
}

// jobsTable prints the jobs, or a line saying there are none.
func jobsTable(w io.Writer, rows []jobRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no backups, restores or gcs running")
		return err
	}
	tb := newTable(w, "KIND", "BACKUP", "SUBJECT", "DONE", "TOTAL", "%", "RATE", "ETA", "RUNNING", "PROCESS", "STATE")
	for _, r := range rows {
		done, total, pct, rate, eta := "-", "-", "-", "-", "-"
		if r.TotalBytes > 0 {
			done, total, pct = bytesStr(r.DoneBytes), bytesStr(r.TotalBytes), fmt.Sprintf("%.0f", r.Percent)
		}
		if r.BytesPerSecond > 0 {
			rate = bytesStr(int64(r.BytesPerSecond)) + "/s"
		}
		if r.ETASeconds != nil {
			eta = (time.Duration(*r.ETASeconds) * time.Second).Round(time.Second).String()
		}
		state := r.State
		switch {
		case r.Stale:
			state = fmt.Sprintf("stale: process %d is gone", r.PID)
		case r.Waiting != "":
			state = r.Waiting
		case r.Unchecked:
			state = "running? (another PID namespace: run jobs where the driver runs to check)"
		}
		tb.row(r.Kind, orDash(r.Backup), orDash(r.Subject), done, total, pct, rate, eta,
			(time.Duration(r.ElapsedSeconds) * time.Second).Round(time.Second).String(),
			fmt.Sprintf("%s/%d", r.Process, r.PID), state)
	}
	return tb.flush()
}

// publishJob starts the progress record of this process's backup or
// restore in --state-dir's jobs/, next to the driver's, for "jobs". It is
// best effort: without a writable state directory nothing is published,
// and a state directory that does not exist is not created for it (on a
// machine that is not a node, a backup to S3 leaves no /var/lib/chainvol
// behind, which `make e2e-cluster` would take for a node's state).
func (a *app) publishJob(kind, what, backup, subject string) *jobrec.Publisher {
	if fi, err := os.Stat(a.stateDir); err != nil || !fi.IsDir() {
		return nil
	}
	return jobrec.Start(jobrec.DirOf(a.stateDir), jobrec.Record{Kind: kind, What: what, Backup: backup, Subject: subject})
}

// targetName is the configured name of target tgt ("" = the default), or
// tgt itself when it cannot be told.
func (a *app) targetName(tgt string) string {
	t, err := a.lookupTarget(tgt)
	if err != nil {
		return tgt
	}
	return t.Name
}
