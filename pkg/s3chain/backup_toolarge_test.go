package s3chain_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// TestBackupTooLargeForChain: a chain's block size is fixed by its first
// backup, so a volume grown past MaxVolumeSize of it fails with
// ErrVolumeTooLarge (which wraps ErrInvalidOptions), naming the limit in
// bytes and a new chain as the way out, before anything is read or
// stored; a volume at the limit still fits, and so does one in a new
// chain. A volume past 2 TiB in a default (2 MiB) chain gets the same
// error, not "block size 4194304 differs" for a size it never asked for
// (issue 24). Sources are sparse files: nothing is allocated.
func TestBackupTooLargeForChain(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, storetest.NewMem(), nil)
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const bs = s3chain.MinBlockSize
	lim := s3chain.MaxVolumeSize(bs)
	for _, c := range []struct {
		chain string
		bs    int64
	}{{"lab/small", bs}, {"lab/default", 0}} {
		if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: c.chain, Source: sparse("first", 1<<20), BlockSize: c.bs}); err != nil {
			t.Fatalf("first backup of %s: %v", c.chain, err)
		}
	}
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/small", Source: sparse("at-limit", lim)}); err != nil {
		t.Fatalf("backup of %d bytes into a chain of %d-byte blocks: %v", lim, bs, err)
	}
	if got, err := repo.ChainBlockSize(ctx, "lab/small"); err != nil || got != bs {
		t.Fatalf("ChainBlockSize = %d, %v; want %d", got, err, bs)
	}
	for _, c := range []struct {
		chain string
		size  int64
		limit int64
	}{
		{"lab/small", lim + bs, lim},
		{"lab/default", s3chain.MaxVolumeSize(s3chain.DefaultBlockSize) + 1, s3chain.MaxVolumeSize(s3chain.DefaultBlockSize)},
	} {
		_, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: c.chain, Source: sparse("big", c.size)})
		if !errors.Is(err, s3chain.ErrVolumeTooLarge) || !errors.Is(err, s3chain.ErrInvalidOptions) {
			t.Fatalf("backup of %d bytes into %s: %v, want ErrVolumeTooLarge", c.size, c.chain, err)
		}
		for _, w := range []string{strconv.FormatInt(c.limit, 10), c.chain, "new chain"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
		if ms, _ := repo.Backups(ctx, c.chain); len(ms) > 2 {
			t.Errorf("refused backup left %d backups in %s", len(ms), c.chain)
		}
	}
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/small-2", Source: sparse("big", lim+bs)}); err != nil {
		t.Fatalf("backup of %d bytes into a new chain: %v", lim+bs, err)
	}
}
