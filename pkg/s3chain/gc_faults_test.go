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

// TestGCLeaseLostSaysSo: a gc whose lock is taken over while it reads the
// chain's manifests fails with ErrLeaseLost (retryable: another process
// judged it abandoned), not with the "context canceled" its reads saw when
// the lease's context ended — callers retry the one and report the other
// (TestChainProtocolInterleavingsObjectLock under load: "gc during the
// retention: ... context canceled").
func TestGCLeaseLostSaysSo(t *testing.T) {
	faulty := storetest.NewFaulty(storetest.NewMem())
	ctx := context.Background()
	// The backups that make the chain hold a lease a loaded machine keeps;
	// the gc's is short, so that the takeover below is judged quickly.
	setup, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: time.Minute})
	repo, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: time.Second})
	vol := newTestVolume(t, t.TempDir(), 4<<20, chainBS, 4)
	for range 4 {
		if _, _, err := setup.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS}); err != nil {
			t.Fatal(err)
		}
		vol.change(1, 64<<10)
	}
	// Each manifest read takes 300 ms: the gc lasts a while under its lock.
	faulty.Delay(storetest.OpGet, func(k string) bool { return strings.HasPrefix(k, "manifests/") }, 300*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := repo.GC(ctx, s3chain.GCOptions{Chain: "lab/x"})
		done <- err
	}()
	takeOverLock(t, faulty)
	err := <-done
	if !errors.Is(err, s3chain.ErrLeaseLost) || errors.Is(err, context.Canceled) {
		t.Fatalf("gc whose lock was taken over: %v, want ErrLeaseLost", err)
	}
}

// TestGCRefusedLockedDelete: a block judged past its retention by the
// lease's server time but still locked by the store's clock at the delete
// (the store's clock stepped back, or a gateway behind) is kept and counted
// locked: gc does not fail on it (issue 30: gc never fails on a locked
// object), and an emptied doom record is not left behind.
func TestGCRefusedLockedDelete(t *testing.T) {
	s3chain.SetLockMarginForTest(t, 0)
	policy := store.LockPolicy{Mode: store.LockGovernance, Period: time.Second}
	mem := storetest.NewLockedMem(policy)
	faulty := storetest.NewFaulty(mem)
	ctx := context.Background()
	repo, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: time.Second})
	vol := newTestVolume(t, t.TempDir(), 1<<20, chainBS, 1)
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS}); err != nil {
		t.Fatal(err)
	}
	// An unreferenced block object, locked for an hour by the store's own
	// clock; then the clock the gc reads (lease, ModTimes) steps 2 h ahead.
	key := "blocks/lab_2fx/ab/" + strings.Repeat("ab", 32)
	if err := faulty.Put(ctx, key, []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	if err := mem.Retain(ctx, key, store.Retention{Mode: store.LockGovernance, Until: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	faulty.StepClock(2 * time.Hour)
	mem.SetClock(time.Now) // the lock's clock did not step
	st, err := repo.GC(ctx, s3chain.GCOptions{Chain: "lab/x"})
	if err != nil {
		t.Fatalf("gc over a block the store still holds locked: %v", err)
	}
	if st.LockedBlocks == 0 {
		t.Errorf("gc stats %+v: want the refused block counted locked", st)
	}
	if _, err := mem.Stat(ctx, key); err != nil {
		t.Errorf("the locked block: %v", err)
	}
	var dooms []string
	_ = mem.List(ctx, "pending/", func(oi store.ObjectInfo) error {
		dooms = append(dooms, oi.Key)
		return nil
	})
	for _, k := range dooms {
		if strings.Contains(k, "doom") {
			t.Errorf("doom record left: %s", k)
		}
	}
}

// takeOverLock waits until a chain lock exists in st (the backup or gc
// started under test holds it), then deletes every lock, as a process
// that judged them abandoned does. Waiting for the lock, not for a time,
// keeps the takeover inside the operation on a loaded machine.
func takeOverLock(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var keys []string
		_ = st.List(ctx, "pending/", func(oi store.ObjectInfo) error { keys = append(keys, oi.Key); return nil })
		if len(keys) > 0 {
			for _, k := range keys {
				_ = st.Delete(ctx, k)
			}
			return
		}
		if time.Now().After(end) {
			t.Fatal("no chain lock appeared in 20 s")
		}
	}
}
