package s3chain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// lockMargin is how long past an object's retain-until date (by the
// store's clock, as the lease estimates it) gc waits before condemning
// it, so that a store clock a little behind ours does not refuse the
// delete: a refused delete would keep its doom record for good (§7.1).
var lockMargin = 5 * time.Minute

// objectLock is a Repo's view of S3 Object Lock (FORMAT.md §7.4).
type objectLock struct {
	l      store.Locker // nil: the store has none (a file target)
	policy store.LockPolicy

	mu     sync.Mutex
	bucket *store.BucketLock // read once; nil until a read succeeded
}

func newObjectLock(s store.Store) *objectLock {
	l := store.LockerOf(s)
	o := &objectLock{l: l}
	if l != nil {
		o.policy = l.LockPolicy()
	}
	return o
}

// bucketLock returns the bucket's Object Lock configuration, read once.
func (o *objectLock) bucketLock(ctx context.Context) (store.BucketLock, error) {
	if o.l == nil {
		return store.BucketLock{}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bucket == nil {
		bl, err := o.l.BucketLock(ctx)
		if err != nil {
			return bl, fmt.Errorf("read the Object Lock configuration of the bucket: %w", err)
		}
		o.bucket = &bl
	}
	return *o.bucket, nil
}

// active reports whether objects of the store may carry retention, so
// that gc and delete must look before they delete: the target asks for
// retention, or the bucket has Object Lock (a target without lock= on a
// bucket others write with it). For a target without lock= a bucket
// whose configuration cannot be read (no s3:GetBucketObjectLockConfiguration
// permission, a server without the call) counts as one without Object
// Lock, as before there was any: gc and delete work as they did, and a
// delete a lock refuses only keeps its doom record (§7.1).
func (o *objectLock) active(ctx context.Context) (bool, error) {
	if o.policy.Enabled() || o.l == nil {
		return o.policy.Enabled(), nil
	}
	bl, err := o.bucketLock(ctx)
	if err != nil {
		o.mu.Lock()
		o.bucket = &store.BucketLock{}
		o.mu.Unlock()
		return false, nil
	}
	return bl.Enabled, nil
}

// backupRetention returns the retention of the objects a backup started
// at start keeps (the zero Retention when the target asks for none),
// after checking that the bucket can hold it: Object Lock enabled and no
// default retention, which would lock the chain's locks and doom records
// too. Errors: store.ErrNoObjectLock naming the bucket setting, store
// errors.
func (r *Repo) backupRetention(ctx context.Context, start time.Time) (store.Retention, error) {
	o := r.lock
	if !o.policy.Enabled() {
		return store.Retention{}, nil
	}
	bl, err := o.bucketLock(ctx)
	if err != nil {
		return store.Retention{}, err
	}
	if !bl.Enabled {
		return store.Retention{}, fmt.Errorf("%w: target %s asks for retention (lock=, retain=) but its bucket does not have "+
			"Object Lock enabled (bucket setting ObjectLockEnabled): create the bucket with Object Lock "+
			"(aws s3api create-bucket --object-lock-enabled-for-bucket) or enable it on the versioned bucket "+
			"(aws s3api put-object-lock-configuration --object-lock-configuration ObjectLockEnabled=Enabled), "+
			"or remove lock= and retain= from the target", store.ErrNoObjectLock, r.store)
	}
	if bl.DefaultMode != "" {
		return store.Retention{}, fmt.Errorf("%w: the bucket of target %s has a default retention (%s, %d days), "+
			"which would lock chainvol's chain locks and doom records too: remove the bucket's default retention "+
			"rule (keep ObjectLockEnabled=Enabled); chainvol sets each object's retention itself from retain=",
			store.ErrNoObjectLock, r.store, bl.DefaultMode, bl.DefaultDays)
	}
	return o.policy.Until(start), nil
}

// retainedCtx returns ctx under which the object a backup keeps besides
// its blocks and manifest (a chain config, an ownership record) is written
// with the target's retention from now. Errors: backupRetention's.
func (r *Repo) retainedCtx(ctx context.Context) (context.Context, error) {
	ret, err := r.backupRetention(ctx, time.Now())
	if err != nil || ret.Mode == "" {
		return ctx, err
	}
	return store.WithRetention(ctx, ret), nil
}

// retainKeys extends the retention of every key to ret (a retention is
// never shortened), in parallel. Errors: the first of Retain's, naming
// its key.
func (r *Repo) retainKeys(ctx context.Context, keys []string, ret store.Retention) error {
	if ret.Mode == "" || len(keys) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statWorkers * DefaultWorkers)
	for _, k := range keys {
		g.Go(func() error {
			if err := r.lock.l.Retain(gctx, k, ret); err != nil {
				return fmt.Errorf("extend the retention of %s to %s: %w", k, ret.Until.Format(time.RFC3339), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// Deletable reports whether backup id of chain may be deleted now: it is
// ErrRetained, naming the date, while its manifest is under S3 Object Lock
// retention (DeleteBackup refuses it then: on a versioned bucket S3 would
// answer a plain DELETE with a delete marker, hiding a backup that is
// meant to stay), nil when the store has no Object Lock. Callers that
// must not undo anything for a refused delete (the driver's local
// snapshots) ask first. Errors: ErrRetained, ErrBackupNotFound, store
// errors.
func (r *Repo) Deletable(ctx context.Context, chain, id string) error {
	if on, err := r.lock.active(ctx); err != nil || !on {
		return err
	}
	ret, err := r.lock.l.Retention(ctx, manifestKey(chain, id))
	if errors.Is(err, store.ErrObjectNotFound) {
		return fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, chain, id)
	}
	if err != nil {
		return fmt.Errorf("read the retention of backup %q of chain %q: %w", id, chain, err)
	}
	// With gc's margin for the store's clock: a DELETE the store still
	// holds locked would be a delete marker on a versioned bucket, hiding
	// a retained backup.
	if ret.Locked(time.Now().Add(-lockMargin)) {
		return fmt.Errorf("%w: backup %q of chain %q is locked (%s) until %s; it can be deleted after that date",
			ErrRetained, id, chain, ret.Mode, ret.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// unlocked drops from cands the objects under retention at server (the
// store's clock, estimated), counting them in st: first by inference (an
// object written less than the target's retain= ago is locked), then by
// reading the retention of the rest, since a reused block's was extended.
// A gc never condemns a locked object: its delete would be refused and
// its doom record kept for good. Errors: store errors but not-found (an
// object gone meanwhile is dropped).
func (r *Repo) unlocked(ctx context.Context, cands []store.ObjectInfo, server time.Time, st *GCStats) ([]store.ObjectInfo, error) {
	if on, err := r.lock.active(ctx); err != nil || !on || len(cands) == 0 {
		return cands, err
	}
	const locked, deletable, gone = 0, 1, 2
	state := make([]int8, len(cands))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statWorkers * DefaultWorkers)
	for i, oi := range cands {
		if p := r.lock.policy; p.Enabled() && server.Sub(oi.ModTime) < p.Period+lockMargin {
			continue // written with retain= at most that long ago: still locked
		}
		g.Go(func() error {
			ret, err := r.lock.l.Retention(gctx, oi.Key)
			switch {
			case errors.Is(err, store.ErrObjectNotFound):
				state[i] = gone
				return nil
			case err == nil && !ret.Locked(server.Add(-lockMargin)):
				state[i] = deletable
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read the retention of unreferenced blocks: %w", err)
	}
	var out []store.ObjectInfo
	for i, oi := range cands {
		switch state[i] {
		case deletable:
			out = append(out, oi)
		case locked:
			st.LockedBlocks++
			st.LockedBytes += oi.Size
		}
	}
	return out, nil
}

// put stores a block object of the backup with its retention. On a
// bucket that refuses to replace a locked object (Object Lock without
// versioning) an existing object of the key is already a block of this
// digest: the confirm step finds it and extends its retention.
func (j *backupJob) put(ctx context.Context, key string, obj []byte) error {
	ctx = store.SelfChecked(ctx) // a block object: every reader checks its digest
	if j.ret.Mode == "" {
		return j.r.store.Put(ctx, key, obj)
	}
	err := j.r.store.Put(store.WithRetention(ctx, j.ret), key, obj)
	if errors.Is(err, store.ErrObjectLocked) {
		return nil
	}
	if err == nil {
		j.mu.Lock()
		if j.written == nil {
			j.written = map[string]bool{}
		}
		j.written[key] = true
		j.mu.Unlock()
	}
	return err
}

// retainFound extends to j.ret the retention of the object found for each
// digest (found: digest to key) that the backup did not write itself
// with it, and of the chain's config, whose secret every manifest needs.
// It runs after the confirm round that found them all: by I4 no gc deletes
// them afterwards, so a not-found here is a foreign delete.
func (j *backupJob) retainFound(ctx context.Context, found map[digest]string) error {
	if j.ret.Mode == "" {
		return nil
	}
	keys := []string{configKey(j.cfg.Chain)}
	j.mu.Lock()
	for _, k := range found {
		if !j.written[k] {
			keys = append(keys, k)
		}
	}
	j.mu.Unlock()
	return j.r.retainKeys(ctx, keys, j.ret)
}

// makeReady makes the confirmed m ready (the manifest is written without
// retention: one whose confirm failed can still be retracted, or voided
// and deleted by a gc): in a chain with state records
// its ready record first (FORMAT.md §7.5), then the manifest's retention
// and the record's, so that a bucket writer can neither delete the
// backup nor hide it by deleting its record before its date. The order
// keeps every unready manifest free of retention: a gc may void and delete
// an abandoned one, and a locked one it could not. A failure after the
// record leaves a ready backup reported failed whose retention may fall
// short of its date (the caller says so). Errors: markReady's,
// retainKeys'.
func (j *backupJob) makeReady(ctx context.Context, m *Manifest) error {
	keys := []string{manifestKey(m.Chain, m.ID)}
	if j.cfg.ReadyRecords {
		if err := j.r.markReady(ctx, m); err != nil {
			return err
		}
		keys = append(keys, stateKey(m.Chain, m.ID))
	}
	return j.r.retainKeys(ctx, keys, j.ret)
}

// RetainUntil returns the retain-until date of backup id of chain (its
// manifest's S3 Object Lock retention, which its blocks' cover), zero when
// the store has no Object Lock or the manifest none. Errors:
// ErrBackupNotFound, store errors.
func (r *Repo) RetainUntil(ctx context.Context, chain, id string) (time.Time, error) {
	if on, err := r.lock.active(ctx); err != nil || !on {
		return time.Time{}, err
	}
	ret, err := r.lock.l.Retention(ctx, manifestKey(chain, id))
	if errors.Is(err, store.ErrObjectNotFound) {
		return time.Time{}, fmt.Errorf("%w: chain %q has no backup %q", ErrBackupNotFound, chain, id)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the retention of backup %q of chain %q: %w", id, chain, err)
	}
	return ret.Until, nil
}
