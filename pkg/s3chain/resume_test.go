package s3chain_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// resumeCheck restores latest twice with one checkpoint, the first attempt
// broken by interrupt, and checks the bytes and that no block finished in
// the first attempt is fetched again.
func resumeCheck(t *testing.T, c *testChain, interrupt func(o *s3chain.RestoreOptions) context.Context) {
	const workers = 2
	ctx := context.Background()
	keys := c.blockIndices(t, "latest")
	target := filepath.Join(c.dir, "resumed")
	o := s3chain.RestoreOptions{Chain: c.name, BackupID: "latest", Target: target, Workers: workers,
		Checkpoint: filepath.Join(c.dir, "restore.checkpoint")}
	first := o
	firstCtx := interrupt(&first)
	before := map[string]int{}
	for k := range keys {
		before[k] = c.store.Gets(k)
	}
	m, st1, err := c.repo.Restore(firstCtx, first)
	if err == nil || m != nil {
		t.Fatalf("interrupted restore: %v", err)
	}
	c.store.Clear()
	mid := map[string]int{}
	for k := range keys {
		mid[k] = c.store.Gets(k) - before[k]
	}
	_, st2, err := c.repo.Restore(ctx, o)
	if err != nil {
		t.Fatalf("resumed restore: %v", err)
	}
	if got := fileSHA(t, target, c.sizes[len(c.sizes)-1]); got != c.shas[len(c.shas)-1] {
		t.Fatalf("resumed restore: sha256 %s, want %s", got, c.shas[len(c.shas)-1])
	}
	twice := 0
	for k := range keys {
		again := c.store.Gets(k) - before[k] - mid[k]
		if again > 1 || again+mid[k] == 0 {
			t.Errorf("object %s fetched %d times on resume, %d before", k, again, mid[k])
		}
		if again > 0 && mid[k] > 0 {
			twice++
		}
	}
	// Only objects in flight when the first attempt stopped may be fetched
	// twice; everything it finished is skipped.
	if twice > workers || st2.SkippedBlocks == 0 || st2.SkippedBlocks < st1.FetchedBlocks-workers {
		t.Errorf("resume refetched %d objects; first run fetched %d, resume skipped %d fetched %d", twice, st1.FetchedBlocks, st2.SkippedBlocks, st2.FetchedBlocks)
	}
	t.Logf("first attempt fetched %d blocks; resume skipped %d, fetched %d, refetched %d in-flight objects", st1.FetchedBlocks, st2.SkippedBlocks, st2.FetchedBlocks, twice)
}

func TestRestoreResumeAfterCancel(t *testing.T) {
	c := newTestChain(t, 3, testKey(7))
	resumeCheck(t, c, func(o *s3chain.RestoreOptions) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		o.Progress = func(p s3chain.Progress) {
			if p.DoneBytes > p.TotalBytes/2 {
				cancel()
			}
		}
		return ctx
	})
}

func TestRestoreResumeAfterStoreFault(t *testing.T) {
	c := newTestChain(t, 3, nil)
	resumeCheck(t, c, func(o *s3chain.RestoreOptions) context.Context {
		keys := c.blockIndices(t, "latest")
		n := 0
		c.store.Add(storetest.Fault{Op: storetest.OpGet, Err: errors.New("connection reset"), Key: func(k string) bool {
			if _, ok := keys[k]; ok {
				n++ // Faulty calls Key under its lock
			}
			return n >= len(keys)/2
		}})
		return context.Background()
	})
}
