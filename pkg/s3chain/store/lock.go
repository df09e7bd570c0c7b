package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors of S3 Object Lock (S3 User Guide, "Locking objects with Object
// Lock").
var (
	// ErrObjectLocked: a delete or overwrite was refused because the object
	// is under retention (S3 403 AccessDenied "...protected by object
	// lock", the in-memory model's refusal). It is also ErrAccessDenied.
	ErrObjectLocked = fmt.Errorf("%w: object under Object Lock retention", ErrAccessDenied)
	// ErrNoObjectLock: the target asks for retention (lock=) but its bucket
	// cannot keep it: Object Lock is not enabled on the bucket, the bucket
	// has a default retention (which would lock the chain protocol's locks
	// and doom records too), or the store has no Object Lock at all (a
	// file target). It is also ErrBadTarget.
	ErrNoObjectLock = fmt.Errorf("%w: no usable Object Lock", ErrBadTarget)
)

// LockMode is an Object Lock retention mode: GOVERNANCE (users with
// s3:BypassGovernanceRetention may still shorten or remove it) or
// COMPLIANCE (nobody can, not even the account root, until the date).
type LockMode string

// The two retention modes, spelled as S3 does.
const (
	LockGovernance LockMode = "GOVERNANCE"
	LockCompliance LockMode = "COMPLIANCE"
)

// Retention is the retention of one object: no delete or overwrite of it
// before Until (UTC). The zero Retention is none.
type Retention struct {
	Mode  LockMode
	Until time.Time
}

// Covers reports whether r protects at least as long and as strongly as
// want (COMPLIANCE is stronger than GOVERNANCE), so want need not be set.
func (r Retention) Covers(want Retention) bool {
	return r.Mode != "" && !r.Until.Before(want.Until) && (r.Mode == want.Mode || r.Mode == LockCompliance)
}

// Locked reports whether r still holds at now.
func (r Retention) Locked(now time.Time) bool { return r.Mode != "" && r.Until.After(now) }

// LockPolicy is the retention a target URL asks for with lock=MODE and
// retain=PERIOD: every object a backup keeps is written with retain-until
// = the backup's start + Period. The zero policy asks for none.
type LockPolicy struct {
	Mode   LockMode
	Period time.Duration
}

// Enabled reports whether p asks for retention.
func (p LockPolicy) Enabled() bool { return p.Mode != "" }

// Until returns the retention of an object kept by a backup that started
// at start: start + Period (UTC). The S3 store rounds it up to the whole
// second (S3 dates have seconds), never down.
func (p LockPolicy) Until(start time.Time) Retention {
	return Retention{Mode: p.Mode, Until: start.Add(p.Period).UTC()}
}

// ceilSecond rounds t up to the whole second.
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); s.Before(t) {
		return s.Add(time.Second)
	}
	return t
}

// BucketLock is a bucket's Object Lock configuration.
type BucketLock struct {
	// Enabled: the bucket was made (or later switched) with Object Lock.
	Enabled bool
	// DefaultMode and DefaultDays are the bucket's default retention, ""
	// and 0 when it has none (years are given in days of 365).
	DefaultMode LockMode
	DefaultDays int
}

// Locker is the optional capability of a Store whose objects can carry
// Object Lock retention: the S3 store (whether or not its bucket has
// Object Lock) and storetest.Mem, passed through by NewRetryStore and
// storetest.Faulty. Find it with LockerOf.
type Locker interface {
	// LockPolicy is the retention the target asks for (lock=, retain=);
	// the zero policy when none.
	LockPolicy() LockPolicy
	// BucketLock reads the bucket's Object Lock configuration (a bucket
	// without one is Enabled false, not an error).
	BucketLock(ctx context.Context) (BucketLock, error)
	// Retention returns key's retention, the zero Retention when it has
	// none. Errors: ErrObjectNotFound.
	Retention(ctx context.Context, key string) (Retention, error)
	// Retain sets key's retention to r unless it already holds at least
	// as long (a retention is never shortened: S3 refuses that, and a
	// concurrent writer may have set a later date). Errors:
	// ErrObjectNotFound, ErrObjectLocked (the object's retention is
	// shorter but cannot be changed to r, e.g. COMPLIANCE over GOVERNANCE).
	Retain(ctx context.Context, key string, r Retention) error
}

// LockerOf returns s's Locker, or nil when s has none (a file store).
func LockerOf(s Store) Locker {
	if l, ok := s.(Locker); ok {
		return l
	}
	return nil
}

type retentionKey struct{}

// WithRetention returns ctx under which Put and PutIfAbsent of a Locker
// store write the object with retention r (S3 PutObject with
// x-amz-object-lock-mode and -retain-until-date); the zero r is none.
// Stores without Object Lock (file) ignore it: callers check LockerOf
// and BucketLock before relying on it.
func WithRetention(ctx context.Context, r Retention) context.Context {
	return context.WithValue(ctx, retentionKey{}, r)
}

// RetentionOf returns the retention WithRetention put on ctx (zero: none).
func RetentionOf(ctx context.Context) Retention {
	r, _ := ctx.Value(retentionKey{}).(Retention)
	return r
}

// parseLockMode parses the lock= parameter (any letter case).
func parseLockMode(v string) (LockMode, error) {
	switch m := LockMode(strings.ToUpper(v)); m {
	case LockGovernance, LockCompliance:
		return m, nil
	}
	return "", fmt.Errorf("lock=%q must be governance or compliance", v)
}

// ParseRetainPeriod parses a retention period: Nd (days, 24 h each),
// Ny (years of 365 days) or a Go duration such as 36h; it must be
// positive and at most 100 years. Errors: a message naming the value.
func ParseRetainPeriod(v string) (time.Duration, error) {
	var d time.Duration
	var err error
	switch {
	case strings.HasSuffix(v, "d"), strings.HasSuffix(v, "y"):
		unit := 24 * time.Hour
		if strings.HasSuffix(v, "y") {
			unit *= 365
		}
		var n int
		n, err = strconv.Atoi(v[:len(v)-1])
		if time.Duration(n) > 100*365*24*time.Hour/unit {
			err = errors.New("over 100 years")
		}
		d = time.Duration(n) * unit
	default:
		d, err = time.ParseDuration(v)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("retain=%q must be a positive period such as 30d, 1y or 36h", v)
	}
	return d, nil
}

// String names the policy for errors and listings, e.g.
// "COMPLIANCE for 720h0m0s"; "none" for the zero policy.
func (p LockPolicy) String() string {
	if !p.Enabled() {
		return "none"
	}
	return fmt.Sprintf("%s for %v", p.Mode, p.Period)
}

// NoLocker is the Locker of a store without Object Lock, for wrappers
// whose inner store has none: no policy, a bucket without Object Lock, and
// ErrNoObjectLock for Retention and Retain.
type NoLocker struct{}

// LockPolicy is the zero policy.
func (NoLocker) LockPolicy() LockPolicy { return LockPolicy{} }

// BucketLock is a bucket without Object Lock.
func (NoLocker) BucketLock(context.Context) (BucketLock, error) { return BucketLock{}, nil }

// Retention fails with ErrNoObjectLock.
func (NoLocker) Retention(context.Context, string) (Retention, error) {
	return Retention{}, fmt.Errorf("%w: the store has no Object Lock", ErrNoObjectLock)
}

// Retain fails with ErrNoObjectLock.
func (NoLocker) Retain(context.Context, string, Retention) error {
	return fmt.Errorf("%w: the store has no Object Lock", ErrNoObjectLock)
}

// LockerOr returns s's Locker, or NoLocker: what a wrapper of s passes
// through.
func LockerOr(s Store) Locker {
	if l := LockerOf(s); l != nil {
		return l
	}
	return NoLocker{}
}

var _ Locker = (*retryStore)(nil)

// LockPolicy is the inner store's.
func (r *retryStore) LockPolicy() LockPolicy { return LockerOr(r.inner).LockPolicy() }

// BucketLock is the inner store's, retried.
func (r *retryStore) BucketLock(ctx context.Context) (bl BucketLock, err error) {
	err = r.policy.do(ctx, func() error { bl, err = LockerOr(r.inner).BucketLock(ctx); return err })
	return bl, err
}

// Retention is the inner store's, retried.
func (r *retryStore) Retention(ctx context.Context, key string) (ret Retention, err error) {
	err = r.policy.do(ctx, func() error { ret, err = LockerOr(r.inner).Retention(ctx, key); return err })
	return ret, err
}

// Retain is the inner store's, retried: it never shortens, so a repeat
// is harmless.
func (r *retryStore) Retain(ctx context.Context, key string, ret Retention) error {
	return r.policy.do(ctx, func() error { return LockerOr(r.inner).Retain(ctx, key, ret) })
}
