package s3chain_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// BackupHeaders drops the block lists of version-2 and -3 chains (a
// version-1 chain keeps them, its tombstones need them), and "latest" and
// "before:" read the chosen manifest again, with its blocks.
func TestBackupHeadersAndSelection(t *testing.T) {
	ctx := context.Background()
	for _, v := range []int{1, 2, s3chain.FormatVersion} {
		c := buildTestChain(t, 2, nil, v)
		full, err := c.repo.Backups(ctx, c.name)
		if err != nil {
			t.Fatal(err)
		}
		heads, err := c.repo.BackupHeaders(ctx, c.name)
		if err != nil || len(heads) != len(full) {
			t.Fatalf("v%d: %d headers (%v), want %d", v, len(heads), err, len(full))
		}
		for k, h := range heads {
			if h.ID != full[k].ID || (h.Blocks == nil) != (v != 1) {
				t.Errorf("v%d header %d: id %s, %d blocks", v, k, h.ID, len(h.Blocks))
			}
		}
		newest := full[len(full)-1]
		latest, err := c.repo.Manifest(ctx, c.name, "latest")
		if err != nil || latest.ID != newest.ID || !slices.Equal(latest.Blocks, newest.Blocks) || len(latest.Blocks) == 0 {
			t.Errorf("v%d latest: %v, want %s with its %d blocks", v, err, newest.ID, len(newest.Blocks))
		}
		ref, err := target.ParseRef(c.name + "@before:" + full[0].CreatedAt.Add(time.Nanosecond).Format(time.RFC3339Nano))
		if err != nil {
			t.Fatal(err)
		}
		first, err := target.Select(ctx, c.repo, ref)
		if err != nil || first.ID != full[0].ID || !slices.Equal(first.Blocks, full[0].Blocks) || len(first.Blocks) == 0 {
			t.Errorf("v%d before: %v, want %s with its %d blocks", v, err, full[0].ID, len(full[0].Blocks))
		}
	}
}
