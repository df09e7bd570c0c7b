package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// restoreResult is the outcome of "restore"; JSON names are stable.
type restoreResult struct {
	Chain         string  `json:"chain"`
	ID            string  `json:"id"`
	To            string  `json:"to"`
	SizeBytes     int64   `json:"sizeBytes"`
	FSType        string  `json:"fsType"`
	FetchedBlocks int     `json:"fetchedBlocks"`
	SkippedBlocks int     `json:"skippedBlocks"`
	ZeroBlocks    int     `json:"zeroBlocks"`
	FetchedBytes  int64   `json:"fetchedBytes"`
	WrittenBytes  int64   `json:"writtenBytes"`
	Duration      float64 `json:"durationSeconds"`
}

// restoreFlags are the options of "restore".
type restoreFlags struct {
	to, checkpoint string
	force          bool
	transferFlags
}

func (a *app) newRestoreCmd() *cobra.Command {
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "restore [TARGET:]CHAIN@BACKUP --to FILE|DEVICE",
		Short: "Restore a backup onto a disk image file or block device",
		Long: `Restore a backup with the driver's engine, without Kubernetes: bare-metal
recovery onto a disk, or a disk image to move elsewhere. A missing FILE is
written as FILE.partial (sparse, the backup's size) and renamed to FILE
only once the restore is complete and synced, so FILE never holds part of
a backup; an existing file or a device is only
overwritten with --force. A device that is mounted, held (device-mapper, md,
LVM) or open exclusively elsewhere, or a file attached to a loop device, is
refused even with --force; a device is opened exclusively (O_EXCL) for the
whole restore. Every block and the whole volume digest are checked.

The restore is resumable: progress is kept in a checkpoint file (default
FILE.partial.chainvol-checkpoint for a new file, FILE.chainvol-checkpoint
for an existing one, or STATE_DIR/checkpoints/NAME.checkpoint for a
device); run the same command again after an interruption and it continues
(onto FILE.partial for a new file). An interrupted restore onto an existing
file or a device leaves it incomplete, and says so: do not use it until a
rerun completes.
A checkpoint applies only to the very file or disk it was written for (its
device and inode numbers, birth time and size, or the disk behind the
device), and every block it lists is read back and checked against its
digest before it is skipped. The checkpoint is removed when the restore
succeeds.`,
		Example: `  chainvolctl restore demo/data@latest --to /srv/data.img
  chainvolctl restore offsite:prod/db@20261129T101500Z-3f9a0c17 --to /dev/sdb --force`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error { return a.restore(cmd, argv[0], f) }),
	}
	fl := cmd.Flags()
	requiredFlag(fl, &f.to, "to", "file or block device to restore onto")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint file that makes the restore resumable (default: next to --to)")
	fl.BoolVar(&f.force, "force", false, "overwrite an existing file or device")
	f.transferFlags.add(fl, "fetched")
	return cmd
}

func (a *app) restore(cmd *cobra.Command, refArg string, f restoreFlags) error {
	ctx := cmd.Context()
	if err := checkToDir(f.to); err != nil {
		return err
	}
	repo, m, err := a.resolveRef(ctx, refArg)
	if err != nil {
		return err
	}
	plan := a.planRestore(f)
	if err := plan.checkOverwrite(f.force); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(plan.ckpt), 0o750); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	ref, _ := parseRefArg(refArg) // parsed by resolveRef
	ref.Target, ref.Chain, ref.Backup = a.targetName(ref.Target), m.Chain, m.ID
	rec := a.publishJob(jobrec.KindRestore, "restore onto "+f.to, ref.String(), f.to)
	p := newProgress("restore "+m.Chain+"@"+m.ID, f.interval, rec)
	_, st, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: m.Chain, BackupID: m.ID, Destination: plan.write,
		Workers: f.workers, Checkpoint: plan.ckpt, Progress: p.update})
	p.finish()
	op := fmt.Sprintf("restore %s@%s onto %s", m.Chain, m.ID, f.to)
	if errors.Is(err, s3chain.ErrDestinationBusy) {
		return wrapOp(op, err) // nothing written: nothing to resume
	}
	if err != nil {
		return a.explainCorrupt(ctx, repo, m, restoreFailed(plan, op, st, err))
	}
	if err := plan.complete(); err != nil {
		return err
	}
	res := restoreResult{Chain: m.Chain, ID: m.ID, To: f.to, SizeBytes: m.SizeBytes, FSType: m.FSType,
		FetchedBlocks: st.FetchedBlocks, SkippedBlocks: st.SkippedBlocks, ZeroBlocks: st.ZeroBlocks,
		FetchedBytes: st.FetchedBytes, WrittenBytes: st.WrittenBytes, Duration: st.Duration.Seconds()}
	return a.emit(cmd, res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "restored %s@%s onto %s (%s, fsType %s): %d blocks fetched, %d resumed, %d zero in %.1fs\n",
			m.Chain, m.ID, f.to, bytesStr(m.SizeBytes), orDash(m.FSType), st.FetchedBlocks, st.SkippedBlocks, st.ZeroBlocks, res.Duration)
		return err
	})
}

// restoreFailed is the error of a restore that failed after it opened its
// destination, saying what it left there and whether a rerun resumes.
func restoreFailed(plan restorePlan, op string, st s3chain.RestoreStats, err error) error {
	// Only an interruption is worth running again: the checkpoint then
	// skips what was written.
	resumable := errors.Is(err, store.ErrTransient) || errors.Is(err, context.Canceled)
	werr := wrapOp(op, err)
	if note := plan.incomplete(resumable, st.WrittenBytes > 0 || st.SkippedBlocks > 0); note != "" {
		werr = fmt.Errorf("%w (%s)", werr, note)
	}
	return werr
}

// defaultCheckpoint keeps a file's checkpoint beside it; a device's goes to
// the state directory, as /dev is a tmpfs that a reboot empties.
func (a *app) defaultCheckpoint(to string) string {
	if fi, err := os.Stat(to); err == nil && fi.Mode()&os.ModeDevice != 0 {
		return filepath.Join(a.stateDir, "checkpoints", filepath.Base(to)+".checkpoint")
	}
	return to + ".chainvol-checkpoint"
}

// checkOverwrite refuses to overwrite an existing destination without
// --force, unless the checkpoint was written for this very destination
// (the resumption of an earlier restore onto it, not of one onto a file or
// disk that was at this path before).
// checkToDir refuses, as a usage error, a --to whose directory does not
// exist: a typo in it would otherwise restore into a new directory tree.
func checkToDir(to string) error {
	dir := filepath.Dir(to)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usagef("--to %s: the directory %s does not exist; create it first (mkdir -p %s), or fix the path", to, dir, dir)
	case err != nil:
		return usagef("--to %s: %v", to, err)
	case !fi.IsDir():
		return usagef("--to %s: %s is not a directory", to, dir)
	}
	return nil
}

func (p restorePlan) checkOverwrite(force bool) error {
	to, ckpt := p.write, p.ckpt
	// What a restore refuses even with --force (a mounted or held device,
	// a file behind a loop device, a directory) is said first, rather
	// than advising --force and then refusing.
	if err := s3chain.CheckDestination(to); err != nil {
		return err // exit 1, as when the restore itself refuses
	}
	if _, err := os.Stat(to); errors.Is(err, os.ErrNotExist) || force {
		return nil
	} else if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if s3chain.CheckpointFits(ckpt, to) {
		return nil
	}
	if p.partial() {
		return usagef("%s exists, but not from this restore (another backup, or its checkpoint %s is gone); remove it, or pass --force to overwrite it", to, ckpt)
	}
	return usagef("%s exists and would be overwritten; pass --force to restore onto it", to)
}
