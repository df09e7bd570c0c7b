package s3chain_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// TestChainOwnerRefusesAnotherSource: two sources backing up to one chain
// name (two clusters with the same claim, or another disk given the same
// --chain): the second is refused with ErrChainOwned naming both owners,
// writes no manifest, and the chain's latest still restores the first
// source's bytes.
func TestChainOwnerRefusesAnotherSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRepo(t, storetest.NewMem(), nil)
	const chain = "shop/db"
	a := newTestVolume(t, filepath.Join(dir), 8*doomBS, doomBS, 11)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: a.path, BlockSize: doomBS, Owner: "cluster/one"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Owner != "cluster/one" {
		t.Fatalf("manifest owner %q", m.Owner)
	}
	bdir := filepath.Join(dir, "b")
	if err := os.Mkdir(bdir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newTestVolume(t, bdir, 12*doomBS, doomBS, 12)
	_, _, err = r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: b.path, Parent: m.ID, Owner: "cluster/two"})
	if !errors.Is(err, s3chain.ErrChainOwned) || !strings.Contains(err.Error(), "cluster/one") || !strings.Contains(err.Error(), "cluster/two") {
		t.Fatalf("backup by another owner = %v, want ErrChainOwned naming both", err)
	}
	ms, _ := r.Backups(ctx, chain)
	if len(ms) != 1 {
		t.Fatalf("%d backups after the refusal, want 1", len(ms))
	}
	if got, _, _ := restoreSHA(t, r, chain, "latest", dir); got != fileSHA(t, a.path, a.size) {
		t.Fatal("latest does not restore the owner's bytes")
	}
	// The owner goes on as before.
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: a.path, Parent: m.ID, Owner: "cluster/one"}); err != nil {
		t.Fatal(err)
	}
}

// TestChainOwnerTakeOver: a planned migration takes the chain over (by the
// backup's flag or Repo.TakeOver); from then on the previous owner is
// refused and the new one continues the chain incrementally.
func TestChainOwnerTakeOver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRepo(t, storetest.NewMem(), nil)
	const chain = "shop/db"
	v := newTestVolume(t, dir, 8*doomBS, doomBS, 13)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS, Owner: "cluster/one"})
	if err != nil {
		t.Fatal(err)
	}
	m2, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID, Owner: "cluster/two", TakeOver: true})
	if err != nil {
		t.Fatalf("takeover backup: %v", err)
	}
	if owner, _ := r.Owner(ctx, chain); owner != "cluster/two" {
		t.Fatalf("owner after the takeover %q", owner)
	}
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m2.ID, Owner: "cluster/one"}); !errors.Is(err, s3chain.ErrChainOwned) {
		t.Fatalf("backup of the previous owner = %v, want ErrChainOwned", err)
	}
	prev, err := r.TakeOver(ctx, chain, "cluster/one")
	if err != nil || prev != "cluster/two" {
		t.Fatalf("TakeOver = %q, %v", prev, err)
	}
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m2.ID, Owner: "cluster/one"}); err != nil {
		t.Fatalf("backup after taking it back: %v", err)
	}
}

// TestChainOwnerClaimRace: writers of different owners claiming a chain
// made without an owner (an older version's) at once: exactly one wins.
func TestChainOwnerClaimRace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRepo(t, storetest.NewMem(), nil)
	const chain = "old/chain"
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 14)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			ri := newRepo(t, r.Store(), nil)
			_, _, errs[i] = ri.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m.ID, Owner: "host/" + string(rune('a'+i))})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, s3chain.ErrChainOwned):
			t.Fatalf("claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d owners won the claim of an unowned chain, want 1 (%v)", won, errs)
	}
}

// TestChainOwnerEmptiedChain: once every backup of a chain was deleted,
// another source may use its name (there is no history to mix with).
func TestChainOwnerEmptiedChain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRepo(t, storetest.NewMem(), nil)
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 15)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "lab/reuse", Source: v.path, BlockSize: doomBS, Owner: "host/a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, "lab/reuse", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "lab/reuse", Source: v.path, Owner: "host/b"}); err != nil {
		t.Fatalf("backup of a new source into an emptied chain: %v", err)
	}
	if owner, _ := r.Owner(ctx, "lab/reuse"); owner != "host/b" {
		t.Fatalf("owner %q, want host/b", owner)
	}
}

// TestOwnerReadFailureAfterCommitDoesNotVoid: a failure to read the
// chain's owner after the confirm (a network error, the context cancelled
// by a driver stopping) is not a takeover: the backup fails but is not
// voided, so Repo.ConfirmBackup (the driver's resumption) still makes it
// ready. Only a takeover that landed voids it (FORMAT.md §7.5).
func TestOwnerReadFailureAfterCommitDoesNotVoid(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, st, nil)
	const chain = "shop/db"
	v := newTestVolume(t, t.TempDir(), 8*doomBS, doomBS, 21)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS, Owner: "cluster/one"})
	if err != nil {
		t.Fatal(err)
	}
	// The second backup lists the owners before it writes (checkOwner) and
	// after its confirm (stillOwner): the second listing fails.
	st.Add(storetest.Fault{Op: storetest.OpList, Key: func(k string) bool { return strings.HasPrefix(k, "owners/") }, Nth: 2})
	_, _, err = r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID, BackupID: "b2", Owner: "cluster/one"})
	if err == nil {
		t.Fatal("backup whose owner check after the commit failed: no error")
	}
	st.Clear()
	if err := r.ConfirmBackup(ctx, chain, "b2", v.path); err != nil {
		t.Fatalf("ConfirmBackup after a failed owner read: %v (voided?)", err)
	}
	if _, err := r.Manifest(ctx, chain, "b2"); err != nil {
		t.Fatalf("b2 after ConfirmBackup: %v", err)
	}
}

// TestConfirmBackupHoldsAWriterLease: Repo.ConfirmBackup (the driver's
// resumption of an upload stopped after its commit, often long after: the
// node was down) runs under a writer lease like Backup, so a gc meanwhile
// skips the chain instead of voiding the manifest being confirmed (which
// makes the resumption fail, and its id can never be committed again).
func TestConfirmBackupHoldsAWriterLease(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, f, nil)
	const chain = "shop/db"
	v := newTestVolume(t, t.TempDir(), 8*doomBS, doomBS, 22)
	isState := func(k string) bool { return strings.HasSuffix(k, ".state") }
	f.FailKeys(storetest.OpPutIfAbsent, isState, errors.New("lost"))
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS, BackupID: "u"}); err == nil {
		t.Fatal("backup whose ready record failed: no error")
	}
	f.Clear()
	// Pause ConfirmBackup at its first listing of the chain's locks.
	g := f.Hold(storetest.OpList, func(k string) bool { return strings.HasPrefix(k, "pending/") }, 1)
	done := make(chan error, 1)
	go func() { done <- r.ConfirmBackup(ctx, chain, "u", v.path) }()
	if _, err := g.Await(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := newRepo(t, f, nil).GC(ctx, s3chain.GCOptions{Chain: chain})
	g.Release()
	if err != nil || st.VoidedBackups != 0 {
		t.Errorf("gc while ConfirmBackup runs: %+v, %v: want the chain skipped, nothing voided", st, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("ConfirmBackup with a gc meanwhile: %v", err)
	}
	if _, err := r.Manifest(ctx, chain, "u"); err != nil {
		t.Fatalf("u after ConfirmBackup: %v", err)
	}
}
