package s3chain_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

func TestDeleteBackupKeepsOthersRestorable(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, int, []byte, ...int64) *testChain{"v2": newTestChain, "v1": newTestChainV1} {
		t.Run(name, func(t *testing.T) {
			c := mk(t, 5, testKey(2))
			ctx := context.Background()
			var gone []string
			// A middle backup, then the full base, then the newest.
			for _, id := range []string{c.ids[2], c.ids[0], c.ids[5]} {
				if err := c.repo.DeleteBackup(ctx, c.name, id); err != nil {
					t.Fatalf("delete %s: %v", id, err)
				}
				gone = append(gone, id)
				c.checkAll(t, gone...)
			}
			ms, err := c.repo.Backups(ctx, c.name)
			if err != nil || len(ms) != 3 {
				t.Fatalf("after deletes: %d backups, %v", len(ms), err)
			}
			if name == "v1" { // the deleted base stays for its dependents, hidden
				if _, err := c.repo.Manifest(ctx, c.name, c.ids[0]); !errors.Is(err, s3chain.ErrBackupNotFound) {
					t.Errorf("deleted v1 base still visible: %v", err)
				}
			}
			if err := c.repo.DeleteBackup(ctx, c.name, c.ids[2]); !errors.Is(err, s3chain.ErrBackupNotFound) {
				t.Errorf("delete of a deleted backup: %v", err)
			}
			// Any remaining backup may be a parent, not only the latest (a fork).
			for _, p := range []string{ms[0].ID, ms[2].ID} {
				m, _, err := c.repo.Backup(ctx, s3chain.BackupOptions{Chain: c.name, Source: c.dir + "/vol", Parent: p})
				if err != nil || m.ParentID != p {
					t.Errorf("backup on parent %s after deletes: %v", p, err)
				}
			}
		})
	}
}

// blockKeys lists the chain's block objects.
func blockKeys(t *testing.T, c *testChain) []string {
	var keys []string
	err := c.store.List(context.Background(), s3chain.BlockPrefix(c.name), func(oi store.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// referenced is the set of block keys the chain's manifests list.
func referenced(t *testing.T, c *testChain) []string {
	ms, err := c.repo.Backups(context.Background(), c.name)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range ms {
		for _, b := range m.Blocks {
			if b.Digest != "" {
				keys = append(keys, s3chain.BlockKey(c.name, b.Digest))
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func TestGCRemovesOnlyUnreferencedBlocks(t *testing.T) {
	c := newTestChain(t, 4, nil)
	ctx := context.Background()
	for _, id := range []string{c.ids[0], c.ids[1], c.ids[3]} {
		if err := c.repo.DeleteBackup(ctx, c.name, id); err != nil {
			t.Fatal(err)
		}
	}
	all, live := blockKeys(t, c), referenced(t, c)
	if len(all) <= len(live) {
		t.Fatalf("deletes left no garbage: %d blocks, %d referenced", len(all), len(live))
	}
	// A young-block grace period and a dry run delete nothing.
	if st, err := c.repo.GC(ctx, s3chain.GCOptions{MinAge: time.Hour}); err != nil || st.DeletedBlocks != 0 || st.YoungBlocks != len(all)-len(live) {
		t.Fatalf("gc with MinAge: %+v, %v", st, err)
	}
	st, err := c.repo.GC(ctx, s3chain.GCOptions{DryRun: true})
	if err != nil || st.DeletedBlocks != len(all)-len(live) || len(blockKeys(t, c)) != len(all) {
		t.Fatalf("dry run: %+v, %v", st, err)
	}
	// A backup in progress (a version-1 marker here) protects the chain ...
	if err := c.store.Put(ctx, "pending/team-a_2fdb-0/0123456789abcdef.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if st, err := c.repo.GC(ctx, s3chain.GCOptions{}); err != nil || st.DeletedBlocks != 0 || st.SkippedChains != 1 {
		t.Fatalf("gc during a backup: %+v, %v", st, err)
	}
	// ... until the marker is older than the lease TTL.
	short, err := s3chain.NewRepo(c.store, s3chain.RepoOptions{LeaseTTL: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	// The gc runs under that 40 ms lease too: on a loaded machine a refresh
	// can come late and the lease is lost, which is retryable
	// (ErrLeaseLost), so try again a few times.
	deleted := 0
	for try := 0; ; try++ {
		st, err = short.GC(ctx, s3chain.GCOptions{})
		deleted += st.DeletedBlocks // a lost lease may come after some deletes
		if !errors.Is(err, s3chain.ErrLeaseLost) || try == 4 {
			break
		}
	}
	if err != nil || deleted != len(all)-len(live) {
		t.Fatalf("gc: %+v, %v", st, err)
	}
	if got := blockKeys(t, c); !slices.Equal(got, live) {
		t.Errorf("after gc %d blocks remain, %d referenced", len(got), len(live))
	}
	c.checkAll(t, c.ids[0], c.ids[1], c.ids[3])
}

// A target may hold chains under several keys: gc of every chain collects
// those its key opens and leaves (and counts) the others instead of failing.
func TestGCSkipsOtherKeysChains(t *testing.T) {
	c := newTestChain(t, 2, nil)
	ctx := context.Background()
	enc := newRepo(t, c.store, testKey(3))
	vol := newTestVolume(t, t.TempDir(), 1<<20, chainBS, 8)
	if _, _, err := enc.Backup(ctx, s3chain.BackupOptions{Chain: "team-b/secret", Source: vol.path, BlockSize: chainBS}); err != nil {
		t.Fatal(err)
	}
	if err := c.repo.DeleteBackup(ctx, c.name, c.ids[0]); err != nil {
		t.Fatal(err)
	}
	st, err := c.repo.GC(ctx, s3chain.GCOptions{})
	if err != nil || st.OtherKeyChains != 1 || st.Chains != 1 || st.DeletedBlocks == 0 {
		t.Fatalf("gc of a target with another key's chain: %+v, %v", st, err)
	}
	if _, err := c.repo.GC(ctx, s3chain.GCOptions{Chain: "team-b/secret"}); !errors.Is(err, s3chain.ErrWrongKey) {
		t.Errorf("gc of another key's chain by name: %v, want ErrWrongKey", err)
	}
	c.checkAll(t, c.ids[0])
}
