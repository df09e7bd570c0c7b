package volume

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// Waits of a restore whose backup target is unreachable: from retryFirst,
// doubling per failed try up to retryMax, each drawn at random from its
// upper half so that the restores of many nodes do not retry in step.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// replay fills restoring volume lv with backup ref (concrete: chain
// resolved, selector resolved) from repo, or when repo is nil from the
// repository open returns (called once, on the first try), then records it
// ready (PhaseReady, a detected fsType). It runs until it succeeds or fails
// for good. An unreachable target (Unreachable: store.ErrTransient after the
// store's own retries, connection refused, timeouts) pauses it, shown in
// the job's message as "waiting for target: CAUSE", and it tries again
// with backoff for as long as it takes (DeleteVolume cancels it); the
// checkpoint keeps what is written, so each try continues where the last
// stopped. Any other error ends it, as does the pool guard (guardRoom),
// whose backend.ErrNoSpace is returned as the error. Errors: those of
// open and Repo.Restore (s3chain.ErrCorruptBlock, ErrBackupNotFound, ...),
// backend.ErrNoSpace, context.Canceled when the job is stopped.
func (m *Manager) replay(ctx context.Context, j *Job, lv backend.LVol, ref target.Ref, repo *s3chain.Repo, open func(context.Context) (*s3chain.Repo, error)) error {
	j.SetSubject(lv.ID)
	j.SetBackup(ref.String())
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go m.guardRoom(ctx, lv, stop)
	wait := retryFirst
	for {
		before := j.Bytes()
		var err error
		if repo == nil { // a resumed restore: the target is opened once
			if repo, err = open(ctx); err != nil {
				repo = nil
			}
		}
		if err == nil {
			err = m.replayOnce(ctx, j, lv, ref, repo)
		}
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		if err == nil || !Unreachable(err) {
			return err
		}
		if j.Bytes() > before {
			wait = retryFirst // it got somewhere: a new outage
		}
		j.SetWaiting(err, wait)
		klog.InfoS("restore waits for its backup target", "volume", lv.ID, "retryIn", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// replayOnce replays the backup from repo into the lvol, resumably, then
// marks it ready.
func (m *Manager) replayOnce(ctx context.Context, j *Job, lv backend.LVol, ref target.Ref, repo *s3chain.Repo) error {
	path, err := m.pool.DataPath(lv.ID)
	if err != nil {
		return err
	}
	ckpt := m.CheckpointPath(lv.ID)
	if err := os.MkdirAll(filepath.Dir(ckpt), 0o700); err != nil {
		return err
	}
	man, st, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: ref.Chain, BackupID: ref.Backup, Destination: path,
		Checkpoint: ckpt, Progress: j.Progress, Base: m.seededBase(lv)})
	if err != nil {
		return err
	}
	_ = os.Remove(m.restoreBasePath(lv.ID))
	detected := ""
	if mode, _ := s3chain.NormalizeVolumeMode(man.VolumeMode); man.FSType == "" && mode != s3chain.VolumeModeBlock {
		detected, _ = s3chain.DetectFSType(ctx, path)
	}
	ready := func(r *Record) {
		r.Phase, r.RestoreAllocBytes = PhaseReady, 0
		if detected != "" {
			r.FSType = detected
		}
	}
	if _, err := Update(context.Background(), m.pool, lv.ID, ready); err != nil {
		return err
	}
	klog.InfoS("restore done", "volume", lv.ID, "backup", ref.String(), "fetchedBytes", st.FetchedBytes, "baseBlocks", st.BaseBlocks, "duration", st.Duration)
	return nil
}

// seededBase returns the image the data file of lv was seeded with, or
// nil for a full restore.
func (m *Manager) seededBase(lv backend.LVol) *s3chain.Image {
	im, err := s3chain.ReadImage(m.restoreBasePath(lv.ID))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "restore base record unreadable: full restore", "volume", lv.ID)
	}
	if err != nil {
		return nil
	}
	return im
}
