package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// Manager owns the lifecycle state of one node's volumes that is not on
// the lvols themselves: the background jobs (restores, uploads) and their
// final errors, the per-chain locks, the restore
// checkpoints and image records in the state directory, and the index
// from backup snapshot id to local snapshot. It runs the lifecycles on
// them: restore admission (Admit, space.go), the restore of a backup into
// a reserved lvol (Restore, restore.go), the upload of a snapshot
// (Upload, upload.go) and the sweep of backup bases that no longer serve
// (SweepBases, bases.go). It is safe for concurrent use. Create it with
// NewManager.
type Manager struct {
	pool backend.Pool
	cfg  Config
	jobs *jobSet
	// locks is Config.Locks: the caller's try-locks, one set with them.
	locks *trylock.Set
	// failures holds the final error of a background restore that no call
	// has reported yet, by volume name; it is reported once, then forgotten.
	failures sync.Map
	// chainLocks serialise uploads into one chain (a parent must be the
	// chain's latest backup), by "TARGET:CHAIN".
	chainLocks sync.Map
	refs       refIndex
	// admit serialises restore admission with the creation of its lvol
	// (Admit), so two restores never both count the same free space.
	admit sync.Mutex
	// sweep serialises SweepBases.
	sweep sync.Mutex
	// droppedForSpace counts the bases keepBudget deleted; spaceKick
	// wakes WatchSpace (SpaceChanged).
	droppedForSpace atomic.Int64
	spaceKick       chan struct{}
	// debtBound is the copy-on-write debt reflinks may have added since
	// the space watch's last measure began, in bytes (ReflinkMade).
	debtBound atomic.Int64
	// backupNames and backupGroups record backup snapshot and group
	// snapshot names (names.go).
	backupNames, backupGroups *nameStore
	// inst holds the open images of hydrating volumes (instant.go).
	inst instants
}

// Config is what a Manager needs to know of its node.
type Config struct {
	// StateDir holds the restores' checkpoints and seed records
	// (restores/), the backups' image records (images/) and the records
	// of backup snapshot and group snapshot names (snapshots/, groups/:
	// names.go), and the progress records of running jobs (jobs/:
	// pkg/jobrec, read by `chainvolctl jobs`).
	StateDir string
	// Node names this node in messages.
	Node string
	// Owner is recorded as the owner of every chain this node's backups
	// write (s3chain.BackupOptions.Owner: "cluster/ID"); "" skips the
	// check.
	Owner string
	// PoolReserveBytes is the free space restores leave in the pool, in
	// bytes; 0 means min(5% of the pool's filesystem, 1 GiB).
	PoolReserveBytes int64
	// Targets are the backup targets restores read from.
	Targets *target.Set
	// NoLocalBase makes every restore fetch every block from the target,
	// never starting from a local snapshot of the chain (seedRestore).
	NoLocalBase bool
	// Observer hears of restores and backups (metrics, events, the
	// driver's listing cache); nil hears nothing.
	Observer Observer
	// Freezer freezes a staged volume's filesystem for a snapshot
	// (TakeSnapshot); it must be set for snapshots.
	Freezer Freezer
	// Locks are the per-call try-locks of the caller (pkg/driver's, keyed
	// by lvol id and request name): TakeSnapshot holds its source's id in
	// them while it freezes and copies, so that no call the caller locks
	// by that id (a delete, a stage) runs meanwhile. nil: a set of the
	// Manager's own.
	Locks *trylock.Set
	// Keeper, if set, holds the FUSE connections of the instant volumes
	// staged on this node across a driver restart (TakeOverInstants);
	// nil: a restart fails their I/O until they are staged again.
	Keeper Keeper
}

// NewManager returns the manager of the lvols of pool.
// It first removes what a killed driver left in the state directory
// (sweepState).
func NewManager(pool backend.Pool, cfg Config) *Manager {
	if cfg.Locks == nil {
		cfg.Locks = trylock.New()
	}
	m := &Manager{pool: pool, cfg: cfg, jobs: newJobSet(recordDir(cfg.StateDir)), locks: cfg.Locks, refs: refIndex{pool: pool},
		spaceKick:    make(chan struct{}, 1),
		backupNames:  &nameStore{dir: filepath.Join(cfg.StateDir, "snapshots")},
		backupGroups: &nameStore{dir: filepath.Join(cfg.StateDir, "groups")}}
	m.sweepState()
	return m
}

// LockChain takes the lock of chain of target tgt, blocking until it is
// free, and returns its release. It keeps this node's uploads of one chain
// in order, so that each can use the previous as its base; the chain
// protocol (FORMAT.md §7) guards against other writers.
func (m *Manager) LockChain(tgt, chain string) (unlock func()) {
	mu, _ := m.chainLocks.LoadOrStore(tgt+":"+chain, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// recordDir is where the jobs of a manager with state directory stateDir
// publish their progress; "" (no state directory, as in unit tests) for
// nowhere.
func recordDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return jobrec.DirOf(stateDir)
}

// StartJob runs fn in the background under key unless a job with that key
// exists, and returns the job that runs. Its context is detached from the
// caller's: it ends when fn returns or StopJob or StopAll cancels it.
func (m *Manager) StartJob(key, what string, fn func(context.Context, *Job) error) *Job {
	return m.jobs.start(key, what, fn)
}

// startGatedJob is StartJob for a job that runs fn only once Job.Open is
// called (Wait opens it when it blocks); the caller must see that Open is
// called on every path, or the job never runs.
func (m *Manager) startGatedJob(key, what string, fn func(context.Context, *Job) error) *Job {
	return m.jobs.startGated(key, what, fn)
}

// RunningRestores returns the restore jobs that have not ended, in no
// order: what the metrics publish at each scrape.
func (m *Manager) RunningRestores() []*Job { return m.jobs.running(RestoreKey("")) }

// ForgetJob drops a finished job so that a later call starts afresh.
func (m *Manager) ForgetJob(key string) { m.jobs.forget(key) }

// StopJob cancels the job of key, if any, waits for it to end and forgets it.
func (m *Manager) StopJob(key string) { m.jobs.stop(key) }

// StopAll cancels every job and waits for them, so that no restore or
// upload outlives the driver (and its pool) that started it.
func (m *Manager) StopAll() { m.jobs.stopAll() }

// setFailure keeps err as the final error of the restore of the volume
// called name, for the next call of that name (takeFailure).
func (m *Manager) setFailure(name string, err error) { m.failures.Store(name, err) }

// takeFailure returns and forgets the kept final error of the restore of
// the volume called name; nil when there is none.
func (m *Manager) takeFailure(name string) error {
	if v, ok := m.failures.LoadAndDelete(name); ok {
		return v.(error)
	}
	return nil
}

// CheckpointPath is where the restore of volume id records finished blocks.
func (m *Manager) CheckpointPath(id string) string {
	return filepath.Join(m.cfg.StateDir, "restores", id+".checkpoint")
}

// restoreBasePath is where restoring volume id records the image its data
// file was seeded with; it exists only once the seed is durable.
func (m *Manager) restoreBasePath(id string) string {
	return filepath.Join(m.cfg.StateDir, "restores", id+".base")
}

// ImageRecordPath is where the image of backup snapshot id is recorded
// ("*" gives the glob of all records).
func (m *Manager) ImageRecordPath(id string) string {
	return filepath.Join(m.cfg.StateDir, "images", id+".json")
}

// dropRestoreState removes the checkpoint and seed record of volume id's
// restore, and the hydration record of an instant one: it finished,
// failed or was cancelled.
func (m *Manager) dropRestoreState(id string) {
	_ = os.Remove(m.CheckpointPath(id))
	_ = os.Remove(m.restoreBasePath(id))
	_ = lazy.RemoveRecord(m.HydrationRecordPath(id))
}

// CreateSnapshot creates a snapshot lvol recording rec (o.Labels is
// ignored), indexes its backup reference and tells the space watch that
// the copy-on-write debt grew (ReflinkMade; SpaceChanged for one without
// a source). Errors: those of Pool.Create.
func (m *Manager) CreateSnapshot(ctx context.Context, o backend.CreateOptions, rec Record) (backend.LVol, error) {
	o.Kind, o.Labels = backend.KindSnapshot, rec.Encode()
	lv, err := m.pool.Create(ctx, o)
	if err != nil {
		return lv, err
	}
	m.refs.add(lv)
	if o.SourceID != "" {
		m.ReflinkMade(o.SourceID)
	} else {
		m.SpaceChanged()
	}
	return lv, nil
}

// SnapshotOfBackup returns the local snapshot carrying backup snapshot id
// ref (Record.BackupRef), from the index. Errors: backend.ErrNotFound when
// there is none, those of the pool.
func (m *Manager) SnapshotOfBackup(ctx context.Context, ref string) (backend.LVol, error) {
	return m.refs.get(ctx, ref)
}

// DeleteSnapshotsOfBackup stops the upload job (keyed by snapshot id) of
// every local snapshot carrying backup snapshot id ref and deletes them.
// Errors: the first pool error; the others are still tried.
func (m *Manager) DeleteSnapshotsOfBackup(ctx context.Context, ref string) error {
	var first error
	for {
		lv, err := m.refs.get(ctx, ref)
		if errors.Is(err, backend.ErrNotFound) {
			return first
		} else if err != nil {
			return err
		}
		m.jobs.stop(lv.ID)
		_ = os.Remove(m.ImageRecordPath(lv.ID)) // before the lvol: see deleteBase
		if err := m.pool.Delete(ctx, lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) && first == nil {
			first = err
		}
		m.refs.drop(ref, lv.ID)
	}
}

// Lookup returns lvol id if it is of kind k, in any phase. Errors:
// backend.ErrNotFound (also for an lvol of the other kind), those of the pool.
func (m *Manager) Lookup(ctx context.Context, k backend.Kind, id string) (backend.LVol, error) {
	lv, err := m.pool.Get(ctx, id)
	if err == nil && lv.Kind != k {
		err = fmt.Errorf("%s is a %s: %w", id, lv.Kind, backend.ErrNotFound)
	}
	return lv, err
}

// Ready returns lvol id if it is of kind k and ready (no restore fills
// it). Errors: ErrNotReady (wraps backend.ErrNotFound) while a restore
// fills it, ErrHydrating while an instant restore's job does (the volume
// exists and is in use: what needs it ready waits), those of Lookup.
func (m *Manager) Ready(ctx context.Context, k backend.Kind, id string) (backend.LVol, error) {
	lv, err := m.Lookup(ctx, k, id)
	switch {
	case err != nil:
	case Of(lv).Phase == PhaseHydrating:
		err = ErrHydrating
	case !Of(lv).Ready():
		err = ErrNotReady
	}
	return lv, err
}

// Owner is the owner recorded on the chains this node's backups write
// (Config.Owner; "" for none).
func (m *Manager) Owner() string { return m.cfg.Owner }
