package volume

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/tick"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// hydrateWorkers is how many blocks a hydration fetches at once: as many
// as a full restore (the goal is hydration at the restore's rate;
// with pkg/lazy's 4 of BenchmarkInstant, the bench measured it 2.7-3.0× a
// full restore under load).
const hydrateWorkers = s3chain.DefaultWorkers

// progressEvery is how often a hydration reports its progress to its job.
const progressEvery = time.Second

// restoreInstant is the story of an instant restore (restoreMode:
// instant): an lvol of the name is answered (resumeInstant); else the
// backup is resolved and admitted as for a full restore, the lvol is made
// PhaseHydrating, and its hydration starts in the background. The call
// answers as soon as the lvol exists, in a time that does not grow with
// the backup's size. Errors: admitRestore's, resumeInstant's.
func (m *Manager) restoreInstant(ctx context.Context, req RestoreRequest) (backend.LVol, error) {
	if lv, err := m.pool.GetByName(ctx, backend.KindVolume, req.Name); err == nil {
		return m.resumeInstant(req, lv)
	}
	repo, lv, ref, err := m.admitRestore(ctx, req)
	if err != nil {
		return lv, err
	}
	m.startHydration(lv, ref, req.Secrets, repo)
	return lv, nil
}

// resumeInstant answers a retried instant restore whose lvol exists: ready
// or hydrating, the volume (its hydration started again if it stopped);
// another volume of the name is ClassExists (as resumeRestore).
func (m *Manager) resumeInstant(req RestoreRequest, lv backend.LVol) (backend.LVol, error) {
	rec, err := retriedRestore(req, lv)
	if err != nil || rec.Phase != PhaseHydrating {
		return lv, err
	}
	ref, err := recordedRestore(lv)
	if err != nil {
		return lv, err
	}
	m.startHydration(lv, ref, req.Secrets, nil)
	return lv, nil
}

// ResumeHydrations starts the hydration of every volume the pool records
// hydrating: after a driver restart nothing else would (CreateVolume
// answered long ago). The target is opened without call secrets (the
// driver's own credentials). Errors: the pool's listing.
func (m *Manager) ResumeHydrations(ctx context.Context) error {
	vols, err := m.pool.List(ctx, backend.KindVolume)
	if err != nil {
		return fmt.Errorf("list volumes to resume hydration: %w", err)
	}
	for _, lv := range vols {
		if Of(lv).Phase != PhaseHydrating {
			continue
		}
		ref, err := recordedRestore(lv)
		if err != nil {
			klog.ErrorS(err, "hydrating volume records a bad restore reference", "volume", lv.ID)
			continue
		}
		klog.InfoS("resuming hydration", "volume", lv.ID, "backup", ref.String())
		m.startHydration(lv, ref, nil, nil)
	}
	return nil
}

// startHydration runs (or finds running) the hydration job of lv; a job
// that ended in failure is started again, but not one that was cancelled:
// that is DeleteVolume's StopJob waiting for it to end (or the driver's
// shutdown), and a job started again there would hydrate a volume being
// deleted (TestInstantRetryDuringDelete). StopJob forgets it once ended.
func (m *Manager) startHydration(lv backend.LVol, ref backupid.Ref, secrets map[string]string, repo *s3chain.Repo) *Job {
	key := RestoreKey(lv.Name)
	if j := m.jobs.get(key); j != nil {
		if done, err := j.Finished(); done && err != nil && !errors.Is(err, context.Canceled) {
			m.ForgetJob(key)
		}
	}
	return m.StartJob(key, "hydration of "+ref.String(), func(ctx context.Context, j *Job) error {
		j.SetSubject(lv.ID)
		j.SetBackup(ref.String())
		err := m.hydrate(ctx, j, lv, ref, secrets, repo)
		if errors.Is(err, context.Canceled) {
			return err
		}
		if err != nil {
			klog.ErrorS(err, "hydration failed; the volume stays hydrating, reads of the block it could not fetch fail (others are fetched when read), and it starts again when the driver restarts or the claim is created again", "volume", lv.ID, "backup", ref.String())
		}
		if m.cfg.Observer != nil {
			m.cfg.Observer.RestoreDone(j, lv, err)
		}
		return err
	})
}

// hydrate opens lv's image (waiting out an unreachable target), fetches
// every block it does not hold yet (lazy.Image.Hydrate, on-demand reads
// and writes joining it) and records the volume ready.
func (m *Manager) hydrate(ctx context.Context, j *Job, lv backend.LVol, ref backupid.Ref, secrets map[string]string, repo *s3chain.Repo) error {
	im, err := m.awaitImage(ctx, j, lv, ref, secrets, repo)
	if err != nil {
		return err
	}
	stop := reportHydration(j, im, func() {
		if m.cfg.Observer != nil { // the claim's RestoreProgress event (rate-limited there)
			m.cfg.Observer.RestoreWaiting(lv, j.Message())
		}
	})
	err = runHydrate(ctx, im, lv.ID)
	stop()
	if err != nil {
		_ = im.Flush() // what it fetched is not fetched again after a restart
		return fmt.Errorf("hydration of %s: %w", ref, err)
	}
	return m.finishHydration(lv, ref)
}

// awaitImage returns lv's open image, opening it (one try at a time
// under the instant's lock, so that NodeStageVolume is never held behind
// a backoff) until the target answers.
func (m *Manager) awaitImage(ctx context.Context, j *Job, lv backend.LVol, ref backupid.Ref, secrets map[string]string, repo *s3chain.Repo) (*lazy.Image, error) {
	wait := retryFirst
	for {
		iv := m.inst.entry(lv.ID)
		iv.mu.Lock()
		var err error
		if iv.im == nil {
			iv.im, err = m.openImageFrom(ctx, lv, ref, secrets, repo)
		}
		im := iv.im
		iv.mu.Unlock()
		if err == nil || !Unreachable(err) || ctx.Err() != nil {
			return im, err
		}
		repo = nil
		j.SetWaiting(err, wait)
		if err := pause(ctx, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, retryMax)
	}
}

// runHydrate runs im.Hydrate, and again after a backoff (1 s doubling to
// 30 s, back to 1 s once it got somewhere) for as long as ctx lives while
// it fails for want of room in the pool (ENOSPC writing the data file:
// other writers took the space, and may give it back). Ending the job
// there would leave the volume hydrating until the driver restarts:
// CreateVolume, whose retry starts a hydration again, answered long ago
// (TestInstantPoolFull). Other errors end it (pkg/lazy rule 9).
func runHydrate(ctx context.Context, im *lazy.Image, id string) error {
	wait := retryFirst
	for {
		before, _ := im.Hydrated()
		err := im.Hydrate(ctx, hydrateWorkers)
		if err == nil || Classify(err) != ClassNoSpace || ctx.Err() != nil {
			return err
		}
		if done, _ := im.Hydrated(); done > before {
			wait = retryFirst
		}
		klog.ErrorS(err, "hydration waits for room in the pool; reads of blocks not fetched yet fail meanwhile", "volume", id, "retryIn", wait)
		if err := pause(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, retryMax)
	}
}

// pause waits half to all of wait (jittered), or until ctx ends: then it
// returns ctx's cause.
func pause(ctx context.Context, wait time.Duration) error {
	t := time.NewTimer(wait/2 + rand.N(wait/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// openImage opens lv's image from its recorded backup with the driver's
// own credentials (NodeStageVolume after a restart).
func (m *Manager) openImage(ctx context.Context, lv backend.LVol) (*lazy.Image, error) {
	ref, err := recordedRestore(lv)
	if err != nil {
		return nil, err
	}
	return m.openImageFrom(ctx, lv, ref, nil, nil)
}

// openImageFrom opens the writable lazy image of backup ref over lv's data
// file and hydration record (repo nil: the target opened with secrets).
func (m *Manager) openImageFrom(ctx context.Context, lv backend.LVol, ref backupid.Ref, secrets map[string]string, repo *s3chain.Repo) (*lazy.Image, error) {
	var err error
	if repo == nil {
		if repo, err = m.cfg.Targets.Open(ctx, ref.Target, secrets); err != nil {
			return nil, fmt.Errorf("open backup target %s: %w", ref.Target, err)
		}
	}
	br, err := repo.OpenBlocks(ctx, ref.Chain, ref.Backup)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", ref, err)
	}
	path, err := m.pool.DataPath(lv.ID)
	if err != nil {
		return nil, err
	}
	opts := lazy.Options{Permanent: func(err error) bool { return !Unreachable(err) }}
	if o := m.cfg.Observer; o != nil {
		opts.OnFetch = func(_ int64, d time.Duration, err error) { o.HydrationFetch(d, err) }
	}
	return lazy.OpenWritable(br, path, m.HydrationRecordPath(lv.ID), opts)
}

// reportHydration feeds im's progress to j every progressEvery (the
// restore gauges and `chainvolctl jobs` read it), then calls tell (the
// claim's progress event), until stopped.
func reportHydration(j *Job, im *lazy.Image, tell func()) (stop func()) {
	report := func() {
		d, t := im.Hydrated()
		j.Progress(s3chain.Progress{DoneBytes: d, TotalBytes: t})
		tell()
	}
	report()
	stopTick := tick.Every(progressEvery, report)
	return func() { stopTick(); report() }
}

// finishHydration records lv ready (Hydrate flushed every block and the
// record before it returned: the crash rule holds), then closes the image
// unless a FUSE file still serves it (NodeUnstageVolume closes it then;
// the next stage is on the data file itself).
func (m *Manager) finishHydration(lv backend.LVol, ref backupid.Ref) error {
	ready := func(r *Record) { r.Phase, r.RestoreAllocBytes = PhaseReady, 0 }
	if _, err := Update(context.Background(), m.pool, lv.ID, ready); err != nil {
		return fmt.Errorf("record hydrated volume ready: %w", err)
	}
	klog.InfoS("hydration done", "volume", lv.ID, "backup", ref.String())
	if iv := m.inst.get(lv.ID); iv != nil {
		iv.mu.Lock()
		iv.ended = true
		if iv.srv == nil {
			m.closeInstant(lv.ID, iv)
		}
		iv.mu.Unlock()
	}
	return nil
}

// HydrationProgress reports the hydration of the volume called name on
// this node: bytes hydrated (fetched, written or zero) and the image's
// size, in bytes, and the error its job ended with (nil while it runs).
// ok is false when no hydration of it is known here.
func (m *Manager) HydrationProgress(name string) (done, total int64, ok bool, err error) {
	j := m.jobs.get(RestoreKey(name))
	if j == nil {
		return 0, 0, false, nil
	}
	_, err = j.Finished()
	return j.Bytes(), j.Total(), true, err
}
