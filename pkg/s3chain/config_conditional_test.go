package s3chain_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// On a store that ignores conditional writes no chain is created: the
// backup fails with store.ErrBadTarget and store.ErrNotAtomic, says what
// to do, and writes nothing at all (no config under chains/).
func TestNewChainRefusesStoreWithoutConditionalWrites(t *testing.T) {
	mem := storetest.NewMem()
	st := storetest.NewFaulty(mem).WithoutConditionalWrites()
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, chainBS, 3)
	for range 2 { // the refusal is not cached into a fallback
		_, _, err := newRepo(t, st, nil).Backup(context.Background(),
			s3chain.BackupOptions{Chain: "team-a/db-0", Source: vol.path, BlockSize: chainBS})
		if !errors.Is(err, store.ErrBadTarget) || !errors.Is(err, store.ErrNotAtomic) {
			t.Fatalf("backup = %v; want ErrBadTarget and ErrNotAtomic", err)
		}
		for _, s := range []string{"If-None-Match", "AWS S3", "MinIO", "versitygw"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error does not name %q: %v", s, err)
			}
		}
		if mem.Len() != 0 {
			t.Fatalf("%d objects written", mem.Len())
		}
	}
}
