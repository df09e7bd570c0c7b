package s3chain_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// chaosStore is one writer's view of a shared store, with that writer's
// own faults, as a process or node sees its network: random delays before
// a request reaches the store, transient errors before it does or after it
// took effect (a lost answer), and stalls (a paused process) during which
// every request waits. A request whose ctx ends while it waits never
// reaches the store, as a client timeout abandons it.
type chaosStore struct {
	store.Store
	mu       sync.Mutex
	rng      *rand.Rand
	pErr     float64
	maxDelay time.Duration
	stallTo  time.Time
}

func newChaos(inner store.Store, seed uint64, pErr float64, maxDelay time.Duration) *chaosStore {
	return &chaosStore{Store: inner, rng: rand.New(rand.NewPCG(seed, 99)), pErr: pErr, maxDelay: maxDelay}
}

// stall makes every request wait until d from now.
func (c *chaosStore) stall(d time.Duration) {
	c.mu.Lock()
	c.stallTo = time.Now().Add(d)
	c.mu.Unlock()
}

var errChaos = fmt.Errorf("%w: chaos", store.ErrTransient)

// before waits and may fail; after may turn a success into a lost answer.
func (c *chaosStore) before(ctx context.Context) (failAfter bool, err error) {
	c.mu.Lock()
	wait := time.Until(c.stallTo)
	if c.maxDelay > 0 {
		wait = max(wait, 0) + time.Duration(c.rng.Int64N(int64(c.maxDelay)))
	}
	fail := c.rng.Float64() < c.pErr
	after := c.rng.IntN(2) == 0
	c.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
	}
	if fail && !after {
		return false, errChaos
	}
	return fail && after, ctx.Err()
}

func (c *chaosStore) write(ctx context.Context, do func() error) error {
	failAfter, err := c.before(ctx)
	if err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	if failAfter {
		return errChaos
	}
	return nil
}

func (c *chaosStore) Put(ctx context.Context, key string, data []byte) error {
	return c.write(ctx, func() error { return c.Store.Put(ctx, key, data) })
}

func (c *chaosStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return c.write(ctx, func() error { return c.Store.PutIfAbsent(ctx, key, data) })
}

func (c *chaosStore) Delete(ctx context.Context, key string) error {
	return c.write(ctx, func() error { return c.Store.Delete(ctx, key) })
}

func (c *chaosStore) Get(ctx context.Context, key string) ([]byte, error) {
	return c.GetMax(ctx, key, 1<<40)
}

func (c *chaosStore) GetMax(ctx context.Context, key string, n int64) ([]byte, error) {
	if _, err := c.before(ctx); err != nil {
		return nil, err
	}
	return c.Store.GetMax(ctx, key, n)
}

func (c *chaosStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if _, err := c.before(ctx); err != nil {
		return store.ObjectInfo{}, err
	}
	return c.Store.Stat(ctx, key)
}

func (c *chaosStore) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if _, err := c.before(ctx); err != nil {
		return err
	}
	return c.Store.List(ctx, prefix, fn)
}

// SweepTemps passes the inner store's capability through, without chaos:
// it is local filesystem work, not a request.
func (c *chaosStore) SweepTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (int, int64, error) {
	return store.SweepTemps(ctx, c.Store, olderThan, dryRun)
}

// LockPolicy and BucketLock pass the inner store's Object Lock through;
// Retention and Retain are requests with chaos like the others.
func (c *chaosStore) LockPolicy() store.LockPolicy { return store.LockerOr(c.Store).LockPolicy() }

func (c *chaosStore) BucketLock(ctx context.Context) (store.BucketLock, error) {
	return store.LockerOr(c.Store).BucketLock(ctx)
}

func (c *chaosStore) Retention(ctx context.Context, key string) (store.Retention, error) {
	if _, err := c.before(ctx); err != nil {
		return store.Retention{}, err
	}
	return store.LockerOr(c.Store).Retention(ctx, key)
}

func (c *chaosStore) Retain(ctx context.Context, key string, r store.Retention) error {
	return c.write(ctx, func() error { return store.LockerOr(c.Store).Retain(ctx, key, r) })
}
