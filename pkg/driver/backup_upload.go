package driver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// startUpload runs (or finds) the background upload of a backup snapshot.
// The secrets live only in the job's closure, never on disk.
func (d *Driver) startUpload(snap backend.LVol, ref target.Ref, secrets map[string]string) *job {
	return d.jobs.start(snap.ID, "backup upload", func(ctx context.Context, j *job) error {
		err := d.uploadWithRetries(ctx, j, snap, ref, secrets)
		d.finishUpload(snap, ref, err)
		return err
	})
}

// finishUpload records an upload's outcome on its snapshot: done, or
// failed with the cause and its code for the next CreateSnapshot. A
// cancelled upload (driver stopping) stays "uploading" and restarts on the
// next call. A done snapshot is the chain's next FIEMAP base, so the sweep
// may now delete older ones (and this one, if its volume is gone).
func (d *Driver) finishUpload(snap backend.LVol, ref target.Ref, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	labels := map[string]string{labelBackupState: backupDone, labelBackupError: "", labelBackupCode: "",
		labelBackupDoneAt: time.Now().UTC().Format(doneAtFormat)}
	if err != nil {
		klog.ErrorS(err, "backup upload failed", "snapshot", snap.ID, "backup", ref.String())
		labels = map[string]string{labelBackupState: backupFailed, labelBackupError: err.Error(), labelBackupCode: chainCode(err).String()}
	}
	if _, lerr := d.pool.SetLabels(context.Background(), snap.ID, labels); lerr != nil {
		klog.ErrorS(lerr, "record backup state", "snapshot", snap.ID)
		return
	}
	if err == nil {
		d.index.invalidate(ref.Target)
		d.sweepBases(context.Background())
	}
}

// uploadAttempts bounds the retries of a whole upload after a failure the
// store layer does not retry (an S3 server's transient conflict, a broken
// connection mid-stream); a retry re-sends only blocks not yet stored.
const uploadAttempts = 3

// uploadWithRetries runs upload until it succeeds, fails for a reason a
// retry cannot fix (bad input, credentials, cancellation), or runs out of attempts.
func (d *Driver) uploadWithRetries(ctx context.Context, j *job, snap backend.LVol, ref target.Ref, secrets map[string]string) error {
	var err error
	for attempt := 1; attempt <= uploadAttempts; attempt++ {
		if err = d.upload(ctx, j, snap, ref, secrets); err == nil || ctx.Err() != nil {
			return err
		}
		if c := chainCode(err); c == codes.InvalidArgument || c == codes.PermissionDenied {
			return err
		}
		klog.InfoS("backup upload failed, retrying", "backup", ref.String(), "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	return err
}

// upload backs the snapshot up as the chain's next link, incremental from
// the parent pickParent chooses. The chain protocol (FORMAT.md §7) makes it
// safe against other writers; the per-chain mutex only keeps this node's
// uploads of one chain in order, so each can use the previous as its base.
func (d *Driver) upload(ctx context.Context, j *job, snap backend.LVol, ref target.Ref, secrets map[string]string) error {
	mu, _ := d.chainLocks.LoadOrStore(ref.Target+":"+ref.Chain, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if err != nil {
		return err
	}
	if done, err := uploadedBefore(ctx, repo, ref); done || err != nil {
		return err
	}
	src, err := d.pool.DataPath(snap.ID)
	if err != nil {
		return err
	}
	opts := s3chain.BackupOptions{Chain: ref.Chain, Source: src, SizeBytes: snap.SizeBytes, BackupID: ref.Backup,
		VolumeMode: volumeMode(snap), FSType: snap.Labels[labelFSType], SourceVolume: snap.SourceID,
		Node: d.opts.NodeID, Progress: j.progress,
		GroupID: snap.Labels[labelGroupID], Member: snap.Labels[labelGroupMember]} // group_take.go
	opts.BlockSize = backupBlockSize(snap) // blocksize.go
	if opts.VolumeMode == s3chain.VolumeModeFilesystem && opts.FSType == "" {
		opts.FSType, _ = s3chain.DetectFSType(ctx, src)
	}
	if opts.Parent, opts.Base, err = d.pickParent(ctx, repo, ref, snap.ID); err != nil {
		return err
	}
	finished := d.metrics.backupStarted(cmp.Or(ref.Target, d.targets.Default()), ref.Chain)
	m, st, err := repo.Backup(ctx, opts)
	finished(st, err)
	if err != nil {
		return err
	}
	d.recordImage(snap.ID, m)
	klog.InfoS("backup uploaded", "backup", ref.String(), "parent", m.ParentID, "changedBytes", st.ChangedBytes,
		"uploadedBytes", st.UploadedBytes, "storedBytes", st.StoredBytes, "duration", st.Duration)
	return nil
}

// uploadedBefore reports whether the backup's manifest exists and every
// block it lists is stored: an upload a restart interrupted after its
// commit. A manifest whose blocks are not all there was left by a commit
// that failed (FORMAT.md §7) and is removed, so the upload runs again.
func uploadedBefore(ctx context.Context, repo *s3chain.Repo, ref target.Ref) (bool, error) {
	if _, err := repo.Manifest(ctx, ref.Chain, ref.Backup); errors.Is(err, s3chain.ErrBackupNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	err := repo.Verify(ctx, ref.Chain, ref.Backup, false)
	if err == nil || !errors.Is(err, s3chain.ErrCorruptBlock) {
		return err == nil, err
	}
	klog.InfoS("removing the manifest of an upload that did not commit", "backup", ref.String(), "err", err)
	return false, repo.DeleteBackup(ctx, ref.Chain, ref.Backup)
}

// pickParent chooses what the next backup is compared with: the newest
// backup of the chain whose local snapshot this node still holds (reading
// only the blocks FIEMAP shows changed since), else the chain's latest
// backup without a base (every block read and compared by digest), else
// none. Any backup may be the parent (FORMAT.md §7): a fork is fine.
func (d *Driver) pickParent(ctx context.Context, repo *s3chain.Repo, ref target.Ref, self string) (string, string, error) {
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return "", "", poolError("list snapshots", err)
	}
	slices.SortFunc(snaps, func(a, b backend.LVol) int {
		return strings.Compare(b.Labels[labelBackupDoneAt], a.Labels[labelBackupDoneAt])
	})
	for _, s := range snaps {
		r, err := parseBackupSnapshotID(s.Labels[labelBackupRef])
		if err != nil || s.ID == self || s.Labels[labelBackupState] != backupDone || r.Target != ref.Target ||
			(r.Chain != ref.Chain && r.Chain != hashedMark+chainHash(ref.Chain)) {
			continue
		}
		if _, err := repo.Manifest(ctx, ref.Chain, r.Backup); err == nil {
			p, _ := d.pool.DataPath(s.ID)
			return r.Backup, p, nil
		}
	}
	latest, err := repo.Manifest(ctx, ref.Chain, target.Latest)
	switch {
	case err == nil:
		return latest.ID, "", nil
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return "", "", nil
	}
	return "", "", err
}

// volumeMode is the manifest's volumeMode for a snapshot of lv.
func volumeMode(lv backend.LVol) string {
	if lv.Labels[labelAccessType] == accessBlock {
		return s3chain.VolumeModeBlock
	}
	return s3chain.VolumeModeFilesystem
}
