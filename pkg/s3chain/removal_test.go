package s3chain_test

import (
	"context"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestRemovalPreviewMatchesGC: for every backup deleted in turn (a middle
// one, the full base, the newest, then all the rest), RemovalPreview counts
// exactly the blocks and bytes that DeleteBackup and a GC with no grace then
// delete, and changes nothing itself. In a version-1 chain a deleted base
// keeps its blocks for its dependents (a tombstone), which the preview must
// follow.
func TestRemovalPreviewMatchesGC(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, int, []byte, ...int64) *testChain{"v2": newTestChain, "v1": newTestChainV1} {
		t.Run(name, func(t *testing.T) {
			c := mk(t, 5, testKey(2))
			ctx := context.Background()
			order := []string{c.ids[2], c.ids[0], c.ids[5], c.ids[1], c.ids[3], c.ids[4]}
			freedAny := false
			for k, id := range order {
				before := len(blockKeys(t, c))
				p, err := c.repo.RemovalPreview(ctx, c.name, []string{id})
				if err != nil {
					t.Fatalf("preview the removal of %s: %v", id, err)
				}
				if n := len(blockKeys(t, c)); n != before {
					t.Fatalf("the preview changed the block count from %d to %d", before, n)
				}
				if p.EmptiesChain != (k == len(order)-1) || p.UnreferencedBlocks != 0 {
					t.Errorf("preview of %s: %+v", id, p)
				}
				if err := c.repo.DeleteBackup(ctx, c.name, id); err != nil {
					t.Fatal(err)
				}
				st, err := c.repo.GC(ctx, s3chain.GCOptions{Chain: c.name})
				if err != nil {
					t.Fatal(err)
				}
				if st.DeletedBlocks != p.FreedBlocks || st.DeletedBytes != p.FreedBytes {
					t.Errorf("removal of %s: preview %d blocks (%d bytes), gc deleted %d (%d bytes)",
						id, p.FreedBlocks, p.FreedBytes, st.DeletedBlocks, st.DeletedBytes)
				}
				freedAny = freedAny || p.FreedBlocks > 0
			}
			if !freedAny {
				t.Errorf("no removal freed anything: the test proves nothing")
			}
		})
	}
}
