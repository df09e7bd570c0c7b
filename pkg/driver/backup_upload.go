package driver

import (
	"context"
	"errors"
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
		labels := map[string]string{labelBackupState: backupDone}
		if err != nil {
			klog.ErrorS(err, "backup upload failed", "snapshot", snap.ID, "backup", ref.String())
			labels = map[string]string{labelBackupState: backupFailed, labelBackupError: err.Error()}
		}
		if _, lerr := d.pool.SetLabels(context.Background(), snap.ID, labels); lerr != nil {
			klog.ErrorS(lerr, "record backup state", "snapshot", snap.ID)
		}
		if err == nil {
			d.supersedeBases(snap, ref)
		}
		return err
	})
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

// upload backs the snapshot up as the chain's next link: incremental from
// the chain's latest backup, with that backup's local snapshot (if this
// node still has it) as the FIEMAP changed-block base.
func (d *Driver) upload(ctx context.Context, j *job, snap backend.LVol, ref target.Ref, secrets map[string]string) error {
	mu, _ := d.chainLocks.LoadOrStore(ref.Target+":"+ref.Chain, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if err != nil {
		return err
	}
	if _, err := repo.Manifest(ctx, ref.Chain, ref.Backup); err == nil {
		return nil // uploaded before a restart could record it
	}
	src, err := d.pool.DataPath(snap.ID)
	if err != nil {
		return err
	}
	opts := s3chain.BackupOptions{Chain: ref.Chain, Source: src, SizeBytes: snap.SizeBytes, BackupID: ref.Backup,
		VolumeMode: volumeMode(snap), FSType: snap.Labels[labelFSType], SourceVolume: snap.SourceID,
		Node: d.opts.NodeID, Progress: j.progress}
	if opts.VolumeMode == "filesystem" && opts.FSType == "" {
		opts.FSType, _ = s3chain.DetectFSType(ctx, src)
	}
	latest, err := repo.Manifest(ctx, ref.Chain, target.Latest)
	switch {
	case err == nil:
		opts.Parent, opts.Base = latest.ID, d.baseSnapshotPath(ctx, ref, latest.ID)
	case !errors.Is(err, s3chain.ErrBackupNotFound):
		return err
	}
	m, st, err := repo.Backup(ctx, opts)
	if err != nil {
		return err
	}
	klog.InfoS("backup uploaded", "backup", ref.String(), "parent", m.ParentID, "changedBytes", st.ChangedBytes,
		"uploadedBytes", st.UploadedBytes, "storedBytes", st.StoredBytes, "duration", st.Duration)
	return nil
}

func volumeMode(lv backend.LVol) string {
	if lv.Labels[labelAccessType] == accessBlock {
		return "block"
	}
	return "filesystem"
}

// baseSnapshotPath returns the data path of the local snapshot of backup
// id in ref's chain, or "" when this node no longer has it.
func (d *Driver) baseSnapshotPath(ctx context.Context, ref target.Ref, id string) string {
	ref.Backup = id
	want := backupSnapshotID(ref)
	snaps, _ := d.pool.List(ctx, backend.KindSnapshot)
	for _, s := range snaps {
		if s.Labels[labelBackupRef] == want && s.Labels[labelBackupState] == backupDone {
			p, _ := d.pool.DataPath(s.ID)
			return p
		}
	}
	return ""
}

// supersedeBases deletes the local snapshots of older backups of the same
// chain: the new one is the next incremental's base, and keeping more would
// pin their blocks in the pool for nothing.
func (d *Driver) supersedeBases(snap backend.LVol, ref target.Ref) {
	ctx := context.Background()
	snaps, _ := d.pool.List(ctx, backend.KindSnapshot)
	for _, s := range snaps {
		r, err := parseBackupSnapshotID(s.Labels[labelBackupRef])
		if err != nil || s.ID == snap.ID || s.Labels[labelBackupState] != backupDone {
			continue
		}
		if r.Target == ref.Target && (r.Chain == ref.Chain || r.Chain == hashedMark+chainHash(ref.Chain)) {
			if err := d.pool.Delete(ctx, s.ID); err != nil {
				klog.ErrorS(err, "delete superseded backup base", "snapshot", s.ID)
			}
		}
	}
}
