package storetest

import (
	"context"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// The Object Lock operations a Fault can target (store.Locker).
const (
	OpRetention Op = "retention"
	OpRetain    Op = "retain"
)

var _ store.Locker = (*Faulty)(nil)

// LockPolicy is the inner store's (store.NoLocker's when it has none).
func (f *Faulty) LockPolicy() store.LockPolicy { return store.LockerOr(f.inner).LockPolicy() }

// BucketLock is the inner store's, unfaulted.
func (f *Faulty) BucketLock(ctx context.Context) (store.BucketLock, error) {
	return store.LockerOr(f.inner).BucketLock(ctx)
}

// Retention reads through inner unless a fault of OpRetention fires.
func (f *Faulty) Retention(ctx context.Context, key string) (r store.Retention, err error) {
	err = f.call(ctx, OpRetention, key, nil, func(ctx context.Context) error {
		r, err = store.LockerOr(f.inner).Retention(ctx, key)
		return err
	})
	return r, err
}

// Retain sets through inner unless a fault of OpRetain fires.
func (f *Faulty) Retain(ctx context.Context, key string, r store.Retention) error {
	return f.call(ctx, OpRetain, key, nil, func(ctx context.Context) error {
		return store.LockerOr(f.inner).Retain(ctx, key, r)
	})
}
