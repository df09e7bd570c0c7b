package s3chain_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// unreadableLock is a store whose bucket lock configuration cannot be
// read (credentials without s3:GetBucketObjectLockConfiguration).
type unreadableLock struct{ *storetest.Mem }

func (unreadableLock) BucketLock(context.Context) (store.BucketLock, error) {
	return store.BucketLock{}, fmt.Errorf("get object lock configuration: %w", store.ErrAccessDenied)
}

// A target without lock= works as before on a bucket whose Object Lock
// configuration cannot be read: backup, delete and gc succeed.
func TestObjectLockUnreadableConfigWithoutLock(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t, unreadableLock{storetest.NewMem()}, nil)
	vol := newTestVolume(t, t.TempDir(), 1<<20, 64<<10, 8)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/a", Source: vol.path, BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, "ns/a", m.ID); err != nil {
		t.Fatal(err)
	}
	if st, err := r.GC(ctx, s3chain.GCOptions{Chain: "ns/a"}); err != nil || st.DeletedBlocks == 0 {
		t.Fatalf("gc: %+v, %v", st, err)
	}
}

// With lock=, the same unreadable configuration fails the first backup
// (it cannot be checked), naming the cause, before anything is written.
func TestObjectLockUnreadableConfigWithLock(t *testing.T) {
	mem := storetest.NewLockedMem(store.LockPolicy{Mode: store.LockCompliance, Period: time.Hour})
	r := newRepo(t, unreadableLock{mem}, nil) // its policy is mem's
	vol := newTestVolume(t, t.TempDir(), 1<<20, 64<<10, 8)
	_, _, err := r.Backup(context.Background(), s3chain.BackupOptions{Chain: "ns/a", Source: vol.path, BlockSize: 64 << 10})
	if !errors.Is(err, store.ErrAccessDenied) || mem.Len() != 0 {
		t.Fatalf("backup = %v with %d objects; want ErrAccessDenied and nothing written", err, mem.Len())
	}
}
