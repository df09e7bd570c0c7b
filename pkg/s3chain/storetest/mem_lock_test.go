package storetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// The model refuses to delete or replace a locked object until its date,
// extends but never shortens, and refuses retention without Object Lock.
func TestMemObjectLockModel(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := storetest.NewLockedMem(store.LockPolicy{Mode: store.LockCompliance, Period: time.Hour})
	m.SetClock(func() time.Time { return now })
	r := store.Retention{Mode: store.LockCompliance, Until: now.Add(time.Hour)}
	if err := m.Put(store.WithRetention(ctx, r), "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "a"); !errors.Is(err, store.ErrObjectLocked) {
		t.Fatalf("delete of a locked object: %v", err)
	}
	if err := m.Put(ctx, "a", []byte("y")); !errors.Is(err, store.ErrObjectLocked) {
		t.Fatalf("overwrite of a locked object: %v", err)
	}
	if err := m.Retain(ctx, "a", store.Retention{Mode: store.LockCompliance, Until: now}); err != nil {
		t.Fatalf("a shorter date is kept, not an error: %v", err)
	}
	if err := m.Retain(ctx, "a", store.Retention{Mode: store.LockGovernance, Until: now.Add(2 * time.Hour)}); !errors.Is(err, store.ErrObjectLocked) {
		t.Fatalf("COMPLIANCE weakened to GOVERNANCE: %v", err)
	}
	later := store.Retention{Mode: store.LockCompliance, Until: now.Add(2 * time.Hour)}
	if err := m.Retain(ctx, "a", later); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Retention(ctx, "a"); got != later {
		t.Fatalf("retention %+v, want %+v", got, later)
	}
	now = now.Add(2 * time.Hour)
	if err := m.Delete(ctx, "a"); err != nil {
		t.Fatalf("delete after the date: %v", err)
	}
	plain := storetest.NewMem()
	if err := plain.Put(store.WithRetention(ctx, r), "b", nil); !errors.Is(err, store.ErrNoObjectLock) {
		t.Fatalf("retention without Object Lock: %v", err)
	}
}
