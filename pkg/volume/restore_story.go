package volume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// RestoreRequest is a validated CreateVolume that restores a backup into a
// new volume (pkg/driver validates it and holds the name's lock).
type RestoreRequest struct {
	// Name is the CO's volume name: the lvol's name and the job's key.
	Name string
	// Required and Limit are the capacity range in bytes (0: none).
	Required, Limit int64
	// Ref is the backup: target named and configured (target.Set.Lookup),
	// chain and selector as asked (a hashed chain, latest, before:T,
	// group:ID are resolved on the target).
	Ref backupid.Ref
	// Secrets are the call's credentials for the target; never stored.
	Secrets map[string]string
	// Record is what the new volume records besides its restore: access
	// type, the capability's fsType ("" when none), parameter digest, PVC.
	Record Record
	// OwnChain is the chain the new volume's own backups go to, so that a
	// restore into it of a chain that cannot hold its size is refused.
	OwnChain string
	// Instant asks for an instant restore (restoreMode: instant): the
	// volume is answered once admitted, and hydrates in the background
	// while its node serves it (restoreInstant).
	Instant bool
}

// want is what r asks of an lvol of its name.
func (r RestoreRequest) want() Want {
	return Want{Name: r.Name, Required: r.Required, Limit: r.Limit, Record: r.Record}
}

// Observer hears of restores and backups for metrics, events and caches;
// its calls must not block. (Config.Observer; nil hears nothing.)
type Observer interface {
	// RestoreWaiting: a call answers that the restore of lv is still
	// running, or an instant restore's hydration progressed, with its
	// progress message.
	RestoreWaiting(lv backend.LVol, message string)
	// RestoreDone: job j's restore of lv ended, with err (nil: ready).
	RestoreDone(j *Job, lv backend.LVol, err error)
	// BackupStarted: an upload into target begins; the returned function
	// hears its outcome.
	BackupStarted(target string) func(s3chain.BackupStats, error)
	// BackupDone: an upload into target is durable (target's listing changed).
	BackupDone(target string)
	// HydrationFetch: a hydrating volume fetched one block on demand or in
	// the background, taking d, with err (nil: fetched and verified).
	HydrationFetch(d time.Duration, err error)
}

// Restore is the story of a restore, every step owned here: the kept
// failure of the last try is returned once; an lvol of the name is
// answered (resumeRestore: ready, or its job, restarted from its
// checkpoint after a driver restart); else a gated job resolves the backup
// on its target, admits it into the pool (admitRestore), seeds it from
// the best local base (seedRestore), replays the chain (runRestore) and
// records the volume ready, or removes it and keeps the failure. The call
// waits for the job until just before ctx's deadline (awaitRestore), so
// that it answers in time whatever the chain's length. It returns the
// ready lvol, or an error: a refusal of the request (ClassExists,
// ClassInvalid, ClassOutOfRange, ClassDamaged), ClassBusy with progress
// while the restore runs or when another restore of the name is being
// prepared, the kept failure (wrapping the engine's sentinels), or the
// target's and the pool's sentinels. An instant request is restoreInstant's
// story instead.
func (m *Manager) Restore(ctx context.Context, req RestoreRequest) (backend.LVol, error) {
	if req.Instant {
		return m.restoreInstant(ctx, req)
	}
	if err := m.takeFailure(req.Name); err != nil {
		m.ForgetJob(RestoreKey(req.Name)) // its job ended: the next call starts afresh
		return backend.LVol{}, err
	}
	if lv, err := m.pool.GetByName(ctx, backend.KindVolume, req.Name); err == nil {
		return m.resumeRestore(ctx, req, lv)
	}
	what := "restore of " + req.Ref.String()
	j := m.startGatedJob(RestoreKey(req.Name), what, func(ctx context.Context, j *Job) error {
		return m.restoreNew(ctx, j, req)
	})
	// If the call does not wait (wait opens the gate), the job starts just
	// after the answer has gone out rather than competing with it.
	defer time.AfterFunc(answerHeadStart, j.Open)
	if j.What() != what {
		return backend.LVol{}, trylock.Busy(req.Name) // another restore of that name is being prepared
	}
	return m.awaitRestore(ctx, req.Name, j)
}

// answerHeadStart is how long a restore job started by a call that
// answers without waiting for it holds back, so that the answer is sent
// before the job's first burst of work (decoding a large manifest).
const answerHeadStart = 20 * time.Millisecond

// RestoreKey is the job key of the restore of the volume called name:
// the request name, known before the lvol (and its id) exists.
func RestoreKey(name string) string { return "restore:" + name }

// resumeRestore answers a retried request whose lvol exists: the ready
// volume, progress of a running restore, or a restore restarted from its
// checkpoint after a driver restart. Other parameters are ClassExists.
func (m *Manager) resumeRestore(ctx context.Context, req RestoreRequest, lv backend.LVol) (backend.LVol, error) {
	rec, err := retriedRestore(req, lv)
	if err != nil {
		return lv, err
	}
	if rec.Ready() {
		m.ForgetJob(RestoreKey(lv.Name)) // finished while no call waited
		return lv, nil
	}
	ref, err := recordedRestore(lv)
	if err != nil {
		return lv, err
	}
	return m.awaitRestore(ctx, lv.Name, m.startRestore(lv, ref, req.Secrets))
}

// retriedRestore checks that the existing lvol lv is what the retried
// restore req asked for (SameVolume, restored, from the same backup) and
// returns its record. Errors: ClassExists naming the difference.
func retriedRestore(req RestoreRequest, lv backend.LVol) (Record, error) {
	if err := SameVolume(lv, req.want()); err != nil {
		return Record{}, err
	}
	rec := Of(lv)
	if rec.RestoreRef.IsZero() {
		return rec, Refuse(ClassExists, "volume %q exists and was not restored from a backup", req.Name)
	}
	return rec, sameRestoreSource(lv, rec, req.Ref)
}

// recordedRestore returns the concrete backup lv records it is restored
// from. Errors: ClassInternal for a reference that does not parse.
func recordedRestore(lv backend.LVol) (backupid.Ref, error) {
	ref, err := Of(lv).RestoreRef.Ref()
	if err != nil {
		return ref, Refuse(ClassInternal, "volume %s records a bad restore reference: %v", lv.ID, err)
	}
	return ref, nil
}

// awaitRestore waits for the restore job of the volume called name within
// the call's deadline. Done: the ready volume. Failed: the final error
// that names the cause (reported once; the next call starts afresh). Still
// running: ClassBusy with progress.
func (m *Manager) awaitRestore(ctx context.Context, name string, j *Job) (backend.LVol, error) {
	if !Wait(ctx, j) {
		if lv, err := m.pool.GetByName(ctx, backend.KindVolume, name); err == nil && m.cfg.Observer != nil {
			m.cfg.Observer.RestoreWaiting(lv, j.Message())
		}
		return backend.LVol{}, Refuse(ClassBusy, "volume %s: %s", name, j.Message())
	}
	m.ForgetJob(RestoreKey(name))
	if j.Err() != nil {
		if err := m.takeFailure(name); err != nil {
			return backend.LVol{}, err
		}
		return backend.LVol{}, Refuse(ClassBusy, "restore of volume %s was cancelled: %v", name, j.Err())
	}
	lv, err := m.pool.GetByName(ctx, backend.KindVolume, name)
	if err != nil {
		return lv, fmt.Errorf("restored volume: %w", err)
	}
	return lv, nil
}

// restoreNew is the job of a new restore: it admits the backup into the
// pool as a new lvol (admitRestore), seeds it (seedRestore), then restores
// into it (runRestore). An error before the lvol exists is kept for the
// next call of the name.
func (m *Manager) restoreNew(ctx context.Context, j *Job, req RestoreRequest) error {
	repo, lv, ref, err := m.admitRestore(ctx, req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			m.setFailure(req.Name, err)
		}
		return err
	}
	// The target opened and the chain resolved by admitRestore serve the
	// whole restore: seed and every retry.
	m.seedRestore(ctx, lv, ref, repo)
	return m.runRestore(ctx, j, lv, ref, req.Secrets, repo)
}

// startRestore runs (or finds) the background restore of lv.
func (m *Manager) startRestore(lv backend.LVol, ref backupid.Ref, secrets map[string]string) *Job {
	return m.StartJob(RestoreKey(lv.Name), "restore of "+ref.String(), func(ctx context.Context, j *Job) error {
		return m.runRestore(ctx, j, lv, ref, secrets, nil)
	})
}

// runRestore restores into lv from repo (nil: opened with secrets on the
// first try), waiting out an unreachable target (replay). On a final
// failure it removes the lvol and keeps the error for the next call of
// that name.
func (m *Manager) runRestore(ctx context.Context, j *Job, lv backend.LVol, ref backupid.Ref, secrets map[string]string, repo *s3chain.Repo) error {
	open := func(ctx context.Context) (*s3chain.Repo, error) { return m.cfg.Targets.Open(ctx, ref.Target, secrets) }
	err := m.replay(ctx, j, lv, ref, repo, open)
	if errors.Is(err, context.Canceled) {
		return err
	}
	if err != nil {
		klog.ErrorS(err, "restore failed", "volume", lv.ID, "backup", ref.String())
		m.setFailure(lv.Name, fmt.Errorf("restore of %s failed: %w", ref, err))
		m.removeRestored(lv)
	}
	if m.cfg.Observer != nil {
		m.cfg.Observer.RestoreDone(j, lv, err)
	}
	return err
}

// removeRestored deletes a restore's lvol and checkpoint.
func (m *Manager) removeRestored(lv backend.LVol) {
	if err := m.pool.Delete(context.Background(), lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		klog.ErrorS(err, "remove lvol of failed restore", "volume", lv.ID)
	}
	m.dropRestoreState(lv.ID)
}

// CancelRestore stops a running restore or hydration of lv (DeleteVolume
// during one) and removes its checkpoint, or its image and hydration
// record.
func (m *Manager) CancelRestore(lv backend.LVol) {
	m.StopJob(RestoreKey(lv.Name))
	m.stopInstant(lv.ID)
	m.dropRestoreState(lv.ID)
}

// sameRestoreSource refuses a retried request whose backup is not the one
// volume lv was restored from (CSI spec "CreateVolume": a volume of the
// name incompatible with the content source is AlreadyExists). A concrete
// id must be the recorded backup; a selector (latest, before:T, group:ID)
// must name its target and chain: it was resolved once, when the restore
// began, and is not resolved again, so a retry after "latest" moved
// answers the bytes the first attempt promised.
func sameRestoreSource(lv backend.LVol, rec Record, want backupid.Ref) error {
	got, err := rec.RestoreRef.Ref()
	if err != nil {
		return Refuse(ClassInternal, "volume %s records a bad restore reference: %v", lv.ID, err)
	}
	if (want.Target != "" && want.Target != got.Target) || (want.Chain != "" && !SameChain(want, got.Target, got.Chain)) ||
		(want.Concrete() && want.Backup != got.Backup) {
		return Refuse(ClassExists, "volume %q exists, restored from backup %s, not %s", lv.Name, got, want)
	}
	return nil
}
