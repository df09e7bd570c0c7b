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
	ttl := 200 * time.Millisecond
	repo, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: ttl})
	vol := newTestVolume(t, t.TempDir(), 4<<20, chainBS, 4)
	for range 4 {
		if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS}); err != nil {
			t.Fatal(err)
		}
		vol.change(1, 64<<10)
	}
	// Each manifest read takes 100 ms: the gc lasts a while under its lock.
	faulty.Delay(storetest.OpGet, func(k string) bool { return strings.HasPrefix(k, "manifests/") }, 100*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := repo.GC(ctx, s3chain.GCOptions{Chain: "lab/x"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_ = faulty.List(ctx, "pending/", func(oi store.ObjectInfo) error { return faulty.Delete(ctx, oi.Key) })
	err := <-done
	if !errors.Is(err, s3chain.ErrLeaseLost) || errors.Is(err, context.Canceled) {
		t.Fatalf("gc whose lock was taken over: %v, want ErrLeaseLost", err)
	}
}
