package s3chain_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// Issue 12, case 1: 16 backups, three middle ones deleted at the same time
// (v1 chains too, whose deletes rewrite manifests): every delete answers
// OK, every remaining backup restores, and later backups and deletes work.
func TestParallelDeletes(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, int, []byte, ...int64) *testChain{"v2": newTestChain, "v1": newTestChainV1} {
		t.Run(name, func(t *testing.T) {
			c := mk(t, 15, nil)
			ctx := context.Background()
			del := []string{c.ids[4], c.ids[8], c.ids[11]}
			var wg sync.WaitGroup
			errs := make([]error, len(del))
			for k, id := range del {
				repo := newRepo(t, c.store, nil) // as three separate callers
				wg.Go(func() { errs[k] = repo.DeleteBackup(ctx, c.name, id) })
			}
			wg.Wait()
			for k, err := range errs {
				if err != nil {
					t.Errorf("delete %s: %v", del[k], err)
				}
			}
			c.checkAll(t, del...)
			m, _, err := c.repo.Backup(ctx, s3chain.BackupOptions{Chain: c.name, Source: c.dir + "/vol", Parent: c.ids[15]})
			if err != nil {
				t.Fatalf("backup after parallel deletes: %v", err)
			}
			if err := c.repo.DeleteBackup(ctx, c.name, c.ids[15]); err != nil {
				t.Fatalf("delete after parallel deletes: %v", err)
			}
			if sha, _, _ := restoreSHA(t, c.repo, c.name, m.ID, c.dir); sha != fileSHA(t, c.dir+"/vol", m.SizeBytes) {
				t.Errorf("newest backup restores other bytes")
			}
		})
	}
}

// Issue 12, case 2: with b1 ready, backup s2 (parent b1) is slow to write
// its manifest; b1 is deleted and gc runs meanwhile. s2 is ready and
// restores, and gc did not take b1's blocks that s2 uses.
func TestRetentionRacingUpload(t *testing.T) {
	faulty := storetest.NewFaulty(storetest.NewMem())
	ctx := context.Background()
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 4<<20, chainBS, 3)
	repo := newRepo(t, faulty, nil)
	b1, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS})
	if err != nil {
		t.Fatal(err)
	}
	vol.change(2, 100<<10)
	faulty.Delay(storetest.OpPutIfAbsent, func(k string) bool { return strings.HasPrefix(k, "manifests/") }, 300*time.Millisecond)
	type result struct {
		m   *s3chain.Manifest
		err error
	}
	done := make(chan result)
	go func() {
		m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, Parent: b1.ID})
		done <- result{m, err}
	}()
	time.Sleep(100 * time.Millisecond) // s2's manifest write is waiting
	other := newRepo(t, faulty, nil)
	if err := other.DeleteBackup(ctx, "lab/x", b1.ID); err != nil {
		t.Fatalf("delete b1: %v", err)
	}
	st, err := other.GC(ctx, s3chain.GCOptions{})
	if err != nil || st.SkippedChains != 1 || st.DeletedBlocks != 0 {
		t.Fatalf("gc while s2 uploads: %+v, %v; want the chain skipped", st, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("s2: %v", r.err)
	}
	if st, err := other.GC(ctx, s3chain.GCOptions{}); err != nil || st.SkippedChains != 0 {
		t.Fatalf("gc after s2: %+v, %v", st, err)
	}
	if err := repo.Verify(ctx, "lab/x", r.m.ID, true); err != nil {
		t.Fatalf("verify s2 after b1 was deleted and gc ran: %v", err)
	}
	if got, _, _ := restoreSHA(t, repo, "lab/x", r.m.ID, dir); got != fileSHA(t, vol.path, vol.size) {
		t.Error("s2 restores other bytes")
	}
}

// Issue 12, case 3: two writers add a backup on the same parent at the
// same time. Both are kept (a fork), both restore, and every backup can
// then be deleted, parent first.
func TestTwoWritersFork(t *testing.T) {
	c := newTestChain(t, 1, nil)
	ctx := context.Background()
	var ids [2]string
	var shas [2]string
	var wg sync.WaitGroup
	for k := range ids {
		src := filepath.Join(c.dir, fmt.Sprintf("w%d", k))
		v := newTestVolume(t, t.TempDir(), 8<<20, chainBS, uint64(50+k))
		if err := os.Rename(v.path, src); err != nil {
			t.Fatal(err)
		}
		shas[k] = fileSHA(t, src, 8<<20)
		repo := newRepo(t, c.store, nil)
		wg.Go(func() {
			m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: c.name, Source: src, Parent: c.ids[1]})
			if err != nil {
				t.Errorf("writer %d: %v", k, err)
				return
			}
			ids[k] = m.ID
		})
	}
	wg.Wait()
	if t.Failed() || ids[0] == ids[1] {
		t.Fatalf("fork ids %v", ids)
	}
	for k, id := range ids {
		if got, _, _ := restoreSHA(t, c.repo, c.name, id, c.dir); got != shas[k] {
			t.Errorf("fork %s restores other bytes", id)
		}
	}
	for _, id := range append([]string{c.ids[1], c.ids[0]}, ids[:]...) {
		if err := c.repo.DeleteBackup(ctx, c.name, id); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
		if id == c.ids[0] {
			for k, id := range ids {
				if got, _, _ := restoreSHA(t, c.repo, c.name, id, c.dir); got != shas[k] {
					t.Errorf("fork %s after its ancestors were deleted restores other bytes", id)
				}
			}
		}
	}
}

// Issue 12, case 4: a backup running longer than the lease TTL keeps its
// lock alive, so gc leaves its blocks alone; a backup whose lock was taken
// over fails instead of reporting success, and leaves no manifest.
func TestLongBackupKeepsItsBlocks(t *testing.T) {
	faulty := storetest.NewFaulty(storetest.NewMem())
	ctx := context.Background()
	dir := t.TempDir()
	// A TTL a loaded machine still refreshes in time (the lease refreshes
	// well inside it); the blocks' delays make the backup outlast it.
	ttl := time.Second
	repo, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: ttl})
	vol := newTestVolume(t, dir, 4<<20, chainBS, 4)
	b1, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS})
	if err != nil {
		t.Fatal(err)
	}
	vol.change(3, 200<<10)
	// Each new block takes 400 ms (a store call may last up to half a TTL):
	// the backup outlasts the TTL.
	faulty.Delay(storetest.OpPut, func(k string) bool { return strings.HasPrefix(k, "blocks/") }, 400*time.Millisecond)
	done := make(chan error)
	var m *s3chain.Manifest
	go func() {
		var err error
		m, _, err = repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, Parent: b1.ID, Workers: 1})
		done <- err
	}()
	gcRepo, _ := s3chain.NewRepo(faulty, s3chain.RepoOptions{LeaseTTL: ttl})
	deadline := time.After(20 * time.Second)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("long backup: %v", err)
			}
			running = false
		case <-deadline:
			t.Fatal("backup did not finish")
		case <-time.After(ttl / 2):
			_ = repo.DeleteBackup(ctx, "lab/x", b1.ID) // its blocks are now only the running backup's
			if st, err := gcRepo.GC(ctx, s3chain.GCOptions{}); err != nil || st.DeletedBlocks != 0 {
				t.Fatalf("gc during the backup: %+v, %v", st, err)
			}
		}
	}
	faulty.Clear()
	if err := repo.Verify(ctx, "lab/x", m.ID, true); err != nil {
		t.Fatalf("verify the long backup: %v", err)
	}

	// Taken over: the lock disappears (gc judged it abandoned) mid-backup.
	vol.change(3, 200<<10)
	faulty.Delay(storetest.OpPut, func(k string) bool { return strings.HasPrefix(k, "blocks/") }, 300*time.Millisecond)
	go func() {
		_, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, Parent: m.ID, BackupID: "taken", Workers: 1})
		done <- err
	}()
	takeOverLock(t, faulty)
	if err := <-done; !errors.Is(err, s3chain.ErrLeaseLost) {
		t.Fatalf("backup whose lock was taken over: %v, want ErrLeaseLost", err)
	}
	if _, err := repo.Manifest(ctx, "lab/x", "taken"); !errors.Is(err, s3chain.ErrBackupNotFound) {
		t.Errorf("the failed backup left its manifest: %v", err)
	}
}

// A backup waits while a gc holds the chain, and goes ahead once it ends.
func TestBackupWaitsForGC(t *testing.T) {
	mem := storetest.NewMem()
	ctx := context.Background()
	repo, _ := s3chain.NewRepo(mem, s3chain.RepoOptions{LeaseTTL: 5 * time.Second})
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, chainBS, 5)
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path, BlockSize: chainBS}); err != nil {
		t.Fatal(err)
	}
	lock := "pending/lab_2fx/gc-00112233.json"
	if err := mem.Put(ctx, lock, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { mem.Delete(ctx, lock) })
	start := time.Now()
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/x", Source: vol.path}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("backup went ahead after %v while a gc held the chain", d)
	}
}
