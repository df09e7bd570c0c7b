package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// mountResult is the outcome of "backup mount", printed after unmount;
// JSON names are stable.
type mountResult struct {
	Chain            string  `json:"chain"`
	ID               string  `json:"id"`
	Dir              string  `json:"dir"`
	FSType           string  `json:"fsType"`
	Image            string  `json:"image,omitempty"` // a block backup's raw image file
	SizeBytes        int64   `json:"sizeBytes"`
	Blocks           int64   `json:"blocks"`
	DataBlocks       int64   `json:"dataBlocks"`
	FetchedBlocks    int64   `json:"fetchedBlocks"`
	FetchedBytes     int64   `json:"fetchedBytes"`
	FetchedDataBytes int64   `json:"fetchedDataBytes"`
	FailedReads      int64   `json:"failedReads"`
	MountSeconds     float64 `json:"mountSeconds"`
	Duration         float64 `json:"durationSeconds"`
}

// mountFlags are the options of "backup mount".
type mountFlags struct {
	cacheDir string
	retryFor time.Duration
}

func (a *app) newBackupMountCmd() *cobra.Command {
	var f mountFlags
	cmd := &cobra.Command{
		Use:   "mount [TARGET:]CHAIN@BACKUP DIR",
		Short: "Mount a backup's filesystem read-only without restoring it",
		Long: `Mount a backup's filesystem read-only at DIR without restoring it: its
image is served lazily through FUSE (each block fetched from the target
the first time it is read, checked against its digest like any restored
block, then kept in a cache file under --cache-dir until the end), over a
read-only loop device, and mounted without journal replay (ext4 "noload",
XFS "norecovery") and nosuid, nodev, noexec. Nothing is written to the target and only the blocks
read are fetched. A backup without a filesystem (a block volume) is
offered as the raw image file DIR/image instead.

The command stays in the foreground until Ctrl-C, SIGTERM or "umount DIR";
it then unmounts, detaches the loop device and prints how many blocks and
bytes it fetched of how many. While the target is unreachable a read waits
and retries for --retry-for, then fails with EIO: a read never returns
bytes that are not the backup's. Needs root (loop devices, mount) and
/dev/fuse. If the process is killed (SIGKILL), reads fail with EIO and
"umount DIR", "losetup -d" of the device it printed and "umount" of the
directory of the image file it printed undo it.`,
		Example: `  chainvolctl backup mount demo/data@latest /mnt/backup
  chainvolctl backup mount offsite:prod/db@20261129T101500Z-3f9a0c17 /mnt/db -o json`,
		Args: args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error { return a.backupMount(cmd, argv[0], argv[1], f) }),
	}
	f.add(cmd.Flags(), "fails with EIO")
	return cmd
}

// add registers --cache-dir and --retry-for; fails ends --retry-for's
// help: what a read that is still refused then does.
func (f *mountFlags) add(fl *pflag.FlagSet, fails string) {
	fl.StringVar(&f.cacheDir, "cache-dir", "", "directory of the cache file of fetched blocks (default: the system's temporary directory)")
	fl.DurationVar(&f.retryFor, "retry-for", lazy.DefaultRetryFor, "how long a read retries a block the target fails to serve before it "+fails)
}

func (a *app) backupMount(cmd *cobra.Command, refArg, dir string, f mountFlags) error {
	ctx := cmd.Context()
	if err := checkMountDir(dir); err != nil {
		return err
	}
	s, err := a.openBrowse(ctx, refArg, dir, f)
	if err != nil {
		return err
	}
	defer s.close()
	a.tellMounted(cmd.ErrOrStderr(), s.m, s.bw, s.im.Stats(), s.mounted)
	select {
	case <-ctx.Done():
	case <-s.bw.Ended(500 * time.Millisecond):
	}
	return a.endBrowse(cmd, s, "unmounted")
}

// browseSession is a backup mounted for browsing (backup mount, serve).
type browseSession struct {
	m       *s3chain.Manifest
	im      *lazy.Image
	bw      *lazy.Browse
	fuseDir string
	start   time.Time
	mounted time.Duration
}

// openBrowse mounts backup refArg read-only at dir through the lazy image.
// Errors: usage (--retry-for), no FUSE, the reference's, the mount's.
func (a *app) openBrowse(ctx context.Context, refArg, dir string, f mountFlags) (*browseSession, error) {
	if f.retryFor <= 0 {
		return nil, usagef("--retry-for %s: must be positive", f.retryFor)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("mounting a backup needs FUSE: %w", err)
	}
	repo, m, err := a.resolveRef(ctx, refArg)
	if err != nil {
		return nil, err
	}
	br, err := repo.OpenBlocks(ctx, m.Chain, m.ID)
	if err != nil {
		return nil, explain(err)
	}
	im, err := lazy.New(br, lazy.Options{CacheDir: f.cacheDir, RetryFor: f.retryFor,
		Permanent: func(err error) bool { return errors.Is(err, s3chain.ErrCorruptBlock) }})
	if err != nil {
		return nil, err
	}
	s := &browseSession{m: m, im: im, start: time.Now()}
	if s.fuseDir, err = os.MkdirTemp("", "chainvol-backup-mount-"); err != nil {
		im.Close()
		return nil, err
	}
	if s.bw, err = lazy.OpenBrowse(context.WithoutCancel(ctx), im, s.fuseDir, dir, m.FSType); err != nil {
		s.close()
		return nil, fmt.Errorf("mount %s@%s at %s: %w", m.Chain, m.ID, dir, err)
	}
	s.mounted = time.Since(s.start)
	return s, nil
}

// close releases what endBrowse did not: the cache and the FUSE directory.
func (s *browseSession) close() {
	_ = s.im.Close()
	_ = os.Remove(s.fuseDir)
}

// endBrowse unmounts the session and prints what it fetched (verb: what
// happened, "unmounted").
func (a *app) endBrowse(cmd *cobra.Command, s *browseSession, verb string) error {
	m, dir := s.m, s.bw.Dir
	cerr := s.bw.Close()
	st := s.im.Stats()
	res := mountResult{Chain: m.Chain, ID: m.ID, Dir: dir, FSType: m.FSType, SizeBytes: m.SizeBytes,
		Blocks: st.Blocks, DataBlocks: st.DataBlocks, FetchedBlocks: st.FetchedBlocks, FetchedBytes: st.FetchedBytes,
		FetchedDataBytes: st.FetchedDataBytes, FailedReads: st.Failures, MountSeconds: s.mounted.Seconds(), Duration: time.Since(s.start).Seconds()}
	if m.FSType == "" {
		res.Image = s.bw.Image
	}
	if cerr != nil {
		return fmt.Errorf("unmount %s@%s from %s: %w", m.Chain, m.ID, dir, cerr)
	}
	return a.emit(cmd, res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s@%s: fetched %d of %d data blocks (%d blocks in all), %s stored (%s of data) of the image's %s, %d failed reads, in %.1fs\n",
			verb, m.Chain, m.ID, st.FetchedBlocks, st.DataBlocks, st.Blocks, bytesStr(st.FetchedBytes), bytesStr(st.FetchedDataBytes),
			bytesStr(m.SizeBytes), st.Failures, res.Duration)
		return err
	})
}

// tellMounted says on stderr what is mounted where and how to end it.
func (a *app) tellMounted(w io.Writer, m *s3chain.Manifest, bw *lazy.Browse, st lazy.Stats, took time.Duration) {
	if m.FSType == "" {
		fmt.Fprintf(w, "backup %s@%s has no filesystem: its raw image (%s) is %s, read-only; Ctrl-C or \"umount %s\" ends\n",
			m.Chain, m.ID, bytesStr(m.SizeBytes), bw.Image, bw.Dir)
		return
	}
	fmt.Fprintf(w, "mounted %s@%s (%s, %s) read-only at %s in %.2fs (%d of %d data blocks fetched; device %s, image %s); Ctrl-C or \"umount %s\" ends\n",
		m.Chain, m.ID, m.FSType, bytesStr(m.SizeBytes), bw.Dir, took.Seconds(), st.FetchedBlocks, st.DataBlocks, bw.Device, bw.Image, bw.Dir)
}
