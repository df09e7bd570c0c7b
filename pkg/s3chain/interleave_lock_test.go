package s3chain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// TestChainProtocolInterleavingsObjectLock runs the schedules of
// TestChainProtocolInterleavings on an Object Lock store (the in-memory
// model, which refuses to delete or replace a locked object, as a bucket
// without versioning does) with a retention of one second, so that
// deletes and gcs meet both locked and expired objects. Besides the
// invariants of the plain run, after each schedule: every ready backup's
// manifest and, for each of its digests, some object of it are retained
// at least until the backup's start + 1 s, and a fault-free gc during
// the retention fails on nothing (it never condemns a locked object).
// CHAINVOL_LOCK_SCHEDULES sets the number of schedules (default 100).
func TestChainProtocolInterleavingsObjectLock(t *testing.T) {
	n := envInt("CHAINVOL_LOCK_SCHEDULES", 100)
	seed := uint64(envInt("CHAINVOL_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("%d schedules from seed %d (CHAINVOL_SEED=%d reproduces)", n, seed, seed)
	s3chain.SetLockMarginForTest(t, 0)
	policy := store.LockPolicy{Mode: store.LockGovernance, Period: time.Second}
	parallel(t, n, func(k int) {
		runSchedule(t, storetest.NewFaulty(storetest.NewLockedMem(policy)), seed+uint64(k), 80*time.Millisecond, k%2 == 1)
	})
}

// lockedFor is how long the objects of the schedule may stay locked
// after it: the period, rounded up to seconds, and a second.
func (w *world) lockedFor() time.Duration {
	if !w.lock.Enabled() {
		return 0
	}
	return w.lock.Period + 2*time.Second
}

// checkLocked checks, on an Object Lock store, that every ready,
// undeleted backup is retained (manifest and one object per digest) until
// its start + the period at least, and that a gc now fails on nothing.
func (w *world) checkLocked() {
	if !w.lock.Enabled() {
		return
	}
	ctx := context.Background()
	l := store.LockerOf(w.store)
	repo, _ := s3chain.NewRepo(w.store, s3chain.RepoOptions{LeaseTTL: w.ttl})
	objs := map[string][]string{} // digest -> keys
	_ = w.store.List(ctx, "blocks/", func(oi store.ObjectInfo) error {
		d := oi.Key[strings.LastIndexByte(oi.Key, '/')+1:]
		d, _, _ = strings.Cut(d, ".")
		objs[d] = append(objs[d], oi.Key)
		return nil
	})
	for _, r := range w.ready {
		if _, ok := w.deleted[r.id]; ok {
			continue // a delete after the date may have removed it
		}
		m, err := repo.Manifest(ctx, ilChain, r.id)
		if err != nil || !m.CreatedAt.Equal(r.created) {
			continue // check() judged it
		}
		// The start of the backup is before its manifest's createdAt;
		// the retention counts from the start, a little earlier.
		want := store.Retention{Mode: w.lock.Mode, Until: r.created.Add(w.lock.Period - 200*time.Millisecond)}
		if ret, err := l.Retention(ctx, "manifests/app_2fdb/"+r.id+".json"); err != nil || !ret.Covers(want) {
			w.violation("ready backup %s: manifest retained %+v, %v; want until %v", r.id, ret, err, want.Until)
		}
		for _, b := range m.Blocks {
			if !w.someRetained(ctx, l, objs[b.Digest], want) {
				w.violation("ready backup %s: no object of block %d retained until %v", r.id, b.Index, want.Until)
			}
		}
	}
	for range 3 {
		st, err := repo.GC(ctx, s3chain.GCOptions{})
		if err == nil && st.SkippedChains == 0 {
			return
		}
		if err != nil && !errors.Is(err, s3chain.ErrLeaseLost) {
			w.violation("gc during the retention: %+v, %v", st, err)
			return
		}
		time.Sleep(2 * w.ttl)
	}
}

func (w *world) someRetained(ctx context.Context, l store.Locker, keys []string, want store.Retention) bool {
	for _, k := range keys {
		if ret, err := l.Retention(ctx, k); err == nil && ret.Covers(want) {
			return true
		}
	}
	return false
}
