package s3chain_test

import (
	"context"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// TestProtocolRequestCost counts the store requests the chain protocol
// adds to one incremental backup (beyond its block uploads) and to one
// delete, and checks they stay a small constant whatever the chain's
// length: a backup reads only its parent's manifest.
func TestProtocolRequestCost(t *testing.T) {
	ctx := context.Background()
	for _, links := range []int{2, 20} {
		c := newTestChain(t, links-1, nil)
		f := storetest.NewFaulty(c.store)
		repo := newRepo(t, f, nil)
		start := time.Now()
		// The volume as the last backup left it: nothing to upload.
		m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: c.name, Source: c.dir + "/vol", Parent: c.ids[links-1]})
		if err != nil {
			t.Fatal(err)
		}
		backupOps := map[storetest.Op]int{}
		for _, op := range []storetest.Op{storetest.OpPut, storetest.OpPutIfAbsent, storetest.OpGet, storetest.OpStat, storetest.OpDelete, storetest.OpList} {
			backupOps[op] = f.Calls(op)
		}
		total := f.Calls(storetest.OpAny)
		t.Logf("%d-link chain: backup with no changed block: %d requests %v in %v", links, total, backupOps, time.Since(start))
		if total > 13 { // 12, and the ready record (FORMAT.md §7.4)
			t.Errorf("a backup of an unchanged volume made %d requests: %v", total, backupOps)
		}
		before := f.Calls(storetest.OpAny)
		start = time.Now()
		if err := repo.DeleteBackup(ctx, c.name, m.ID); err != nil {
			t.Fatal(err)
		}
		n := f.Calls(storetest.OpAny) - before
		t.Logf("%d-link chain: delete: %d requests in %v", links, n, time.Since(start))
		if n > 3 { // a HEAD, the void record, the DELETE
			t.Errorf("a delete made %d requests", n)
		}
	}
}

// TestProtocolCostS3 logs what one backup of an unchanged volume and one
// delete cost on the real S3 server (wall time; requests as counted above).
func TestProtocolCostS3(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	st, err := store.Open(ctx, srv.URL("cost"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	f := storetest.NewFaulty(st)
	repo := newRepo(t, f, nil)
	vol := newTestVolume(t, t.TempDir(), 8<<20, chainBS, 9)
	first, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/cost", Source: vol.path, BlockSize: chainBS})
	if err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	prev := first.ID
	for range 5 {
		start := time.Now()
		m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/cost", Source: vol.path, Parent: prev})
		if err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
		prev = m.ID
	}
	before := f.Calls(storetest.OpAny)
	start := time.Now()
	if err := repo.DeleteBackup(ctx, "lab/cost", prev); err != nil {
		t.Fatal(err)
	}
	t.Logf("versitygw: backup of an unchanged 8 MiB volume %v; delete %v (%d requests)", took, time.Since(start), f.Calls(storetest.OpAny)-before)
	vol.change(8, chainBS)
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/cost", Source: vol.path, Parent: first.ID}); err != nil {
		t.Fatal(err)
	}
	all, err := repo.Backups(ctx, "lab/cost")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all[:len(all)-1] { // keep only the changed one
		if err := repo.DeleteBackup(ctx, "lab/cost", m.ID); err != nil {
			t.Fatal(err)
		}
	}
	before = f.Calls(storetest.OpAny)
	start = time.Now()
	gs, err := repo.GC(ctx, s3chain.GCOptions{Chain: "lab/cost"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("versitygw: gc of a chain left with 1 backup deleting %d of %d blocks: %v, %d requests", gs.DeletedBlocks, gs.Blocks, time.Since(start), f.Calls(storetest.OpAny)-before)
}
