package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// memLock models a bucket with S3 Object Lock and without versioning, the
// strictest behaviour a server shows (versitygw's posix backend without a
// versioning directory): a delete or overwrite of an object under
// retention is refused, as a DELETE with a version id is on AWS. (On a
// versioned bucket a plain DELETE adds a delete marker instead; code that
// is correct here is correct there.)
type memLock struct {
	enabled bool
	policy  store.LockPolicy
	now     func() time.Time // the store's clock; nil: time.Now
}

var _ store.Locker = (*Mem)(nil)

// NewLockedMem returns an empty in-memory store whose bucket has Object
// Lock enabled (no default retention) and whose target asks for policy
// (the zero policy: none, as a target URL without lock=).
func NewLockedMem(policy store.LockPolicy) *Mem {
	m := NewMem()
	m.lock = memLock{enabled: true, policy: policy}
	return m
}

// SetClock makes now the clock by which retention expires (default
// time.Now), so a test can move past a retain-until date.
func (m *Mem) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lock.now = now
}

func (m *Mem) clock() time.Time {
	if m.lock.now != nil {
		return m.lock.now()
	}
	return time.Now()
}

// writable checks, with m.mu held, that a write of key under ctx may
// happen: a retention needs Object Lock, and no locked object is replaced.
func (m *Mem) writable(ctx context.Context, op, key string) error {
	if r := store.RetentionOf(ctx); r.Mode != "" && !m.lock.enabled {
		return fmt.Errorf("mem %s %q: %w: the bucket has no Object Lock", op, key, store.ErrNoObjectLock)
	}
	return m.unlocked(op, key)
}

// unlocked fails with store.ErrObjectLocked, with m.mu held, when key
// holds an object under retention.
func (m *Mem) unlocked(op, key string) error {
	if o, ok := m.objs[key]; ok && o.ret.Locked(m.clock()) {
		return fmt.Errorf("mem %s %q: %w until %s", op, key, store.ErrObjectLocked, o.ret.Until.Format(time.RFC3339))
	}
	return nil
}

// LockPolicy is the policy of NewLockedMem.
func (m *Mem) LockPolicy() store.LockPolicy { return m.lock.policy }

// BucketLock reports Object Lock enabled for NewLockedMem, without a
// default retention.
func (m *Mem) BucketLock(ctx context.Context) (store.BucketLock, error) {
	return store.BucketLock{Enabled: m.lock.enabled}, ctx.Err()
}

// Retention returns key's retention. Errors: store.ErrObjectNotFound,
// store.ErrInvalidKey, ctx.Err().
func (m *Mem) Retention(ctx context.Context, key string) (store.Retention, error) {
	o, err := m.object(ctx, "retention", key)
	return o.ret, err
}

// Retain extends key's retention to r; a retention that covers r already
// is kept. Errors: store.ErrNoObjectLock (no Object Lock),
// store.ErrObjectLocked (r would shorten or weaken a live retention),
// store.ErrObjectNotFound, store.ErrInvalidKey, ctx.Err().
func (m *Mem) Retain(ctx context.Context, key string, r store.Retention) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	switch {
	case !m.lock.enabled:
		return fmt.Errorf("mem retain %q: %w: the bucket has no Object Lock", key, store.ErrNoObjectLock)
	case !ok:
		return fmt.Errorf("mem retain %q: %w", key, store.ErrObjectNotFound)
	case o.ret.Covers(r):
		return nil
	case o.ret.Locked(m.clock()) && !r.Covers(o.ret): // a weakening, refused as by S3 without bypass
		return fmt.Errorf("mem retain %q: %w: %s until %s", key, store.ErrObjectLocked, o.ret.Mode, o.ret.Until.Format(time.RFC3339))
	}
	o.ret = r
	m.objs[key] = o
	return nil
}
