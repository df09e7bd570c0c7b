package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// createResult is the outcome of "backup create"; JSON names are stable.
type createResult struct {
	backupRow
	ScannedBytes  int64   `json:"scannedBytes"`
	UploadedBytes int64   `json:"uploadedBytes"`
	Blocks        int     `json:"blocks"`
	ZeroBlocks    int     `json:"zeroBlocks"`
	DedupBlocks   int     `json:"dedupBlocks"`
	Duration      float64 `json:"durationSeconds"`
}

// createFlags are the options of "backup create".
type createFlags struct {
	from, chain, id string
	owner           string
	full, takeOver  bool
	freeze          bool // freeze a read-write mounted source for the copy
	allowLive       bool // copy a read-write mounted source as it is
	blockSize       int64
	transferFlags
}

func (a *app) newBackupCreateCmd() *cobra.Command {
	var f createFlags
	cmd := &cobra.Command{
		Use:   "create --from FILE|DEVICE --chain [TARGET:]CHAIN",
		Short: "Back up a disk image or block device into a chain",
		Long: `Back up a disk image file or block device into a chain with the driver's
engine, without Kubernetes. When the chain already has backups the new one is
incremental (its parent is the newest backup) and only changed blocks are
uploaded; --full forces a full backup. The filesystem on the source is
detected and recorded; a source without one is recorded as a raw block
volume (volume mode Block), which the driver restores as a block volume.

The source must not change while it is read: back up an unmounted device,
a read-only snapshot (LVM, reflink copy), or a frozen filesystem. A source
whose filesystem is mounted read-write (the device or a partition of it,
or for an image file a loop device backed by it) is refused, naming the mount point: a copy
of a live filesystem is torn and its restore needs journal recovery. With
--freeze the filesystem is frozen (FIFREEZE) for the whole backup and thawed
when it ends, on errors and on SIGINT, SIGTERM, SIGHUP and SIGQUIT too: the
backup is then clean, but every write to that filesystem waits until the
backup ends. --allow-live copies it anyway. A read-only mount is fine.`,
		Example: `  chainvolctl backup create --from /srv/images/vm1.img --chain lab/vm1
  chainvolctl --target off='s3://backups/x?endpoint=10.0.0.5:9000&region=us-east-1' \
      backup create --from /dev/vg0/snap --chain off:prod/db -o json
  chainvolctl backup create --from /dev/loop3 --chain lab/scratch --freeze`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error { return a.backupCreate(cmd, f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "disk image file or block device to back up (required)")
	fl.StringVar(&f.chain, "chain", "", "chain to add the backup to, [TARGET:]CHAIN (required)")
	fl.StringVar(&f.id, "id", "", "backup id (default: the UTC second and 8 random hex digits, like 20261129T101500Z-3f9a0c17, never one a deleted backup had; an id you choose must not be one a deleted backup had either, or stale references to it would restore this backup)")
	fl.BoolVar(&f.full, "full", false, "make a full backup even when the chain has backups")
	fl.StringVar(&f.owner, "owner", "", "the source this chain is the history of (default: host/HOSTNAME:PATH of --from); a backup of another owner into the chain is refused (docs/FORMAT.md §3.3)")
	fl.BoolVar(&f.takeOver, "take-over", false, "continue a chain another owner made, on purpose (a planned migration): from then on it is this source's")
	fl.BoolVar(&f.freeze, "freeze", false, "freeze a source mounted read-write for the whole backup (its writers wait until it ends) instead of refusing it")
	fl.BoolVar(&f.allowLive, "allow-live", false, "copy a source mounted read-write as it is (torn: a restore of it needs journal recovery)")
	fl.Int64Var(&f.blockSize, "block-size", 0, "block size of a new chain in bytes (default 2 MiB; fixed per chain)")
	f.transferFlags.add(fl, "processed")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("chain")
	return cmd
}

func (a *app) backupCreate(cmd *cobra.Command, f createFlags) error {
	ctx := cmd.Context()
	tgt, chain, err := parseChainArg(f.chain)
	if err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	live, err := checkLiveSource(f)
	if err != nil {
		return err
	}
	if err := a.ensureFileTarget(tgt); err != nil {
		return err
	}
	repo, err := a.openRepo(ctx, tgt)
	if err != nil {
		return err
	}
	o := s3chain.BackupOptions{Chain: chain, Source: f.from, BlockSize: f.blockSize, Workers: f.workers,
		BackupID: f.id, SourceVolume: f.from, FSType: detectFS(ctx, f.from)}
	o.VolumeMode = volumeModeOf(o.FSType)
	o.Node, _ = os.Hostname()
	o.Owner, o.TakeOver = f.owner, f.takeOver
	if o.Owner == "" {
		o.Owner = sourceOwner(f.from)
	}
	if !f.full {
		ms, err := repo.Backups(ctx, chain)
		if err != nil {
			return explain(err)
		}
		if len(ms) > 0 {
			o.Parent = ms[len(ms)-1].ID
		}
	}
	rec := a.publishJob(jobrec.KindBackup, "backup of "+f.from, a.targetName(tgt)+":"+chain, f.from)
	m, st, err := copySource(ctx, repo, o, live, f.interval, rec)
	if err != nil {
		return err
	}
	res := createResult{backupRow: newBackupRow(m), ScannedBytes: st.ScannedBytes, UploadedBytes: st.UploadedBytes,
		Blocks: st.Blocks, ZeroBlocks: st.ZeroBlocks, DedupBlocks: st.DedupBlocks, Duration: st.Duration.Seconds()}
	return a.emit(cmd, res, func(w io.Writer) error {
		kind := "full"
		if m.ParentID != "" {
			kind = "incremental on " + m.ParentID
		}
		_, err := fmt.Fprintf(w, "backed up %s as %s@%s (%s, fsType %s): %s changed, %s uploaded, %s stored in %.1fs\n",
			f.from, m.Chain, m.ID, kind, orDash(m.FSType), bytesStr(m.DataBytes), bytesStr(st.UploadedBytes),
			bytesStr(st.StoredBytes), st.Duration.Seconds())
		return err
	})
}

// copySource runs the backup o, with live's filesystems frozen for exactly
// the copy when there are any to freeze, and a progress display (and the
// job record rec, which it ends).
func copySource(ctx context.Context, repo *s3chain.Repo, o s3chain.BackupOptions, live []liveMount, interval time.Duration,
	rec *jobrec.Publisher) (*s3chain.Manifest, s3chain.BackupStats, error) {
	bctx, thaw, err := freezeFor(ctx, live)
	if err != nil {
		rec.End()
		return nil, s3chain.BackupStats{}, err
	}
	defer thaw() // also on a panic; thawed below as soon as the copy ends
	p := newProgress("backup "+o.Chain, interval, rec)
	o.Progress = p.update
	m, st, err := repo.Backup(bctx, o)
	thaw()
	p.finish()
	if err != nil {
		return nil, st, explain(wrapOp(fmt.Sprintf("backup of %s into chain %s", o.Source, o.Chain), err))
	}
	return m, st, nil
}

// check refuses flag values the engine would refuse later, as usage errors
// (exit 2): a source that does not exist, a bad id or block size. Counts and
// durations are checked for every command by checkFlagValues.
func (f createFlags) check() error {
	fi, err := os.Stat(f.from)
	switch {
	case err != nil:
		return usagef("--from: %v", err)
	case fi.Mode()&os.ModeCharDevice != 0 || fi.IsDir():
		return usagef("--from %s is not a disk image file or a block device", f.from)
	case fi.Mode().IsRegular() && fi.Size() == 0:
		return usagef("--from %s is empty: nothing to back up", f.from)
	}
	if f.freeze && f.allowLive {
		return usagef("--freeze and --allow-live exclude each other: --freeze makes a clean copy, --allow-live a torn one")
	}
	if f.id != "" {
		if err := s3chain.ValidBackupID(f.id); err != nil {
			return usagef("--id: %v", err)
		}
	}
	// The chain format's rule (docs/FORMAT.md §3): 0 means the default.
	if bs := f.blockSize; bs != 0 && (bs < s3chain.MinBlockSize || bs > s3chain.MaxBlockSize || bs%4096 != 0) {
		return usagef("--block-size %d must be a multiple of 4096 from %d to %d bytes", bs, s3chain.MinBlockSize, s3chain.MaxBlockSize)
	}
	return nil
}

// ensureFileTarget creates the directory of a file:// target before the
// first backup, as the driver does for its embedded default: on a machine
// without the driver nothing else would.
func (a *app) ensureFileTarget(name string) error {
	t, err := a.lookupTarget(name)
	if err != nil {
		return err // a [TARGET:] that is not configured: a usage error, as everywhere
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return nil // store.Open reports a bad URL with its own words
	}
	if err := os.MkdirAll(u.Path, 0o750); err != nil {
		return fmt.Errorf("create the directory of target %s: %w", t.Name, err)
	}
	return nil
}

// volumeModeOf is the manifest's volume mode of a source whose filesystem is
// fsType: with a filesystem found it restores as a mount volume, without one
// (a raw device or image) as a block volume, as the driver records them.
func volumeModeOf(fsType string) string {
	if fsType != "" {
		return s3chain.VolumeModeFilesystem
	}
	return s3chain.VolumeModeBlock
}

// detectFS returns the filesystem on path, or "" (unknown) with a warning:
// a backup of an unrecognised disk is still a good backup.
func detectFS(ctx context.Context, path string) string {
	fs, err := s3chain.DetectFSType(ctx, path)
	if err != nil {
		klog.Warningf("could not detect the filesystem on %s (recorded as unknown): %v", path, err)
		return ""
	}
	return fs
}

// sourceOwner is the default owner of the chains a source is backed up
// into: this host and the source's absolute path as given (not resolved:
// an LVM snapshot's /dev/vg/snap points at another dm device each time),
// so another disk given the same --chain is refused while the same image
// file or device path backed up again continues its chain.
func sourceOwner(from string) string {
	host, _ := os.Hostname()
	p, err := filepath.Abs(from)
	if err != nil {
		p = from
	}
	return "host/" + host + ":" + p
}
