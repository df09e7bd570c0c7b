package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// uploadAttempts bounds the retries of a whole upload after a failure the
// store layer does not retry (an S3 server's transient conflict, a broken
// connection mid-stream); a retry re-sends only blocks not yet stored.
const uploadAttempts = 3

// UploadHooks connect an upload to the CSI shell.
type UploadHooks struct {
	// Open opens the backup target of the upload (once per attempt).
	Open func(context.Context) (*s3chain.Repo, error)
	// Started, if set, is called as the engine starts; the function it
	// returns gets the engine's outcome (metrics).
	Started func() func(s3chain.BackupStats, error)
}

// Upload backs snapshot lvol snap up as backup ref (ref.Backup: its id),
// the next link of its chain, incremental from the parent pickParent
// chooses, retrying the whole upload up to uploadAttempts times unless it
// fails for a reason a retry cannot fix (Permanent: bad input,
// credentials) or ctx ends. It records nothing on snap: the caller
// records the outcome. Errors: those of h.Open, Repo.Backup (wrapped
// s3chain, target and backend sentinels); once ctx is done, one that wraps
// context.Canceled whatever the cut request failed with (cancelled).
func (m *Manager) Upload(ctx context.Context, j *Job, snap backend.LVol, ref target.Ref, h UploadHooks) error {
	j.SetSubject(snap.ID)
	j.SetBackup(ref.String())
	var err error
	for attempt := 1; attempt <= uploadAttempts; attempt++ {
		if err = m.upload(ctx, j, snap, ref, h); err == nil || ctx.Err() != nil {
			return cancelled(ctx, err)
		}
		if Permanent(err) {
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
func (m *Manager) upload(ctx context.Context, j *Job, snap backend.LVol, ref target.Ref, h UploadHooks) error {
	defer m.LockChain(ref.Target, ref.Chain)()
	repo, err := h.Open(ctx)
	if err != nil {
		return err
	}
	src, err := m.pool.DataPath(snap.ID)
	if err != nil {
		return err
	}
	if done, err := uploadedBefore(ctx, repo, ref, src); done || err != nil {
		return err
	}
	rec := Of(snap)
	opts := s3chain.BackupOptions{Chain: ref.Chain, Source: src, SizeBytes: snap.SizeBytes, BackupID: ref.Backup,
		VolumeMode: volumeMode(snap), FSType: rec.FSType, SourceVolume: snap.SourceID,
		Node: m.cfg.Node, Owner: m.cfg.Owner, Progress: j.Progress,
		GroupID: rec.GroupID, Member: rec.GroupMember, BlockSize: rec.BlockSize} // group_take.go, blocksize.go
	if opts.VolumeMode == s3chain.VolumeModeBlock || opts.FSType == "" {
		// A Block volume's label may be stale (made from a filesystem, then
		// overwritten by its user): its manifest says what its bytes hold,
		// which decides whether it may restore with mount access (issue 28).
		opts.FSType, _ = s3chain.DetectFSType(ctx, src)
	}
	if opts.Parent, opts.Base, err = m.pickParent(ctx, repo, ref, snap.ID); err != nil {
		return err
	}
	finished := func(s3chain.BackupStats, error) {}
	if h.Started != nil {
		finished = h.Started()
	}
	man, st, err := repo.Backup(ctx, opts)
	finished(st, err)
	if err != nil {
		return err
	}
	m.recordImage(snap.ID, man)
	klog.InfoS("backup uploaded", "backup", ref.String(), "parent", man.ParentID, "changedBytes", st.ChangedBytes,
		"uploadedBytes", st.UploadedBytes, "storedBytes", st.StoredBytes, "duration", st.Duration)
	return nil
}

// uploadedBefore reports whether the backup's manifest exists and its
// commit could be finished: an upload a restart interrupted after its
// commit, confirmed from the snapshot src as Backup confirms before it
// reports ready (FORMAT.md §7). A manifest the snapshot does not match
// (ErrCorruptBlock) was left by a commit that failed and is removed, so the
// upload runs again.
func uploadedBefore(ctx context.Context, repo *s3chain.Repo, ref target.Ref, src string) (bool, error) {
	switch _, err := repo.Manifest(ctx, ref.Chain, ref.Backup); {
	case errors.Is(err, s3chain.ErrBackupNotReady): // committed, not confirmed: finished below
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	err := repo.ConfirmBackup(ctx, ref.Chain, ref.Backup, src)
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
func (m *Manager) pickParent(ctx context.Context, repo *s3chain.Repo, ref target.Ref, self string) (string, string, error) {
	snaps, err := m.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return "", "", fmt.Errorf("list snapshots: %w", err)
	}
	slices.SortStableFunc(snaps, func(a, b backend.LVol) int {
		return Of(b).UploadDoneAt.Compare(Of(a).UploadDoneAt)
	})
	for _, s := range snaps {
		rec := Of(s)
		r, err := rec.BackupRef.Ref()
		if err != nil || s.ID == self || rec.Upload != Uploaded || !SameChain(r, ref.Target, ref.Chain) {
			continue
		}
		if _, err := repo.Manifest(ctx, ref.Chain, r.Backup); err == nil {
			p, _ := m.pool.DataPath(s.ID)
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
	if Of(lv).AccessType == AccessBlock {
		return s3chain.VolumeModeBlock
	}
	return s3chain.VolumeModeFilesystem
}

// recordImage keeps the image of an uploaded backup snapshot (a
// self-contained manifest: every version-2 one) beside it. A failure only
// costs later restores their head start, so it is logged.
func (m *Manager) recordImage(snapID string, man *s3chain.Manifest) {
	im := s3chain.ImageOf(man)
	if im == nil {
		return
	}
	p := m.ImageRecordPath(snapID)
	err := os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = im.WriteFile(p)
	}
	if err != nil {
		klog.ErrorS(err, "record backup image", "snapshot", snapID)
	}
}
