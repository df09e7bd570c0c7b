package s3chain_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// baseChain is two backups of one volume: b0, then b1 after one block was
// zeroed that held data in b0 (so a restore of b1 from b0 must punch it),
// one block changed and one hole filled.
type baseChain struct {
	store      *storetest.Faulty
	repo       *s3chain.Repo
	dir, name  string
	ids, shas  []string
	size       int64
	zeroedIdx  int64
	changedIdx int64
}

func newBaseChain(t *testing.T) *baseChain {
	c := &baseChain{store: storetest.NewFaulty(storetest.NewMem()), dir: t.TempDir(), name: "team-a/db-0"}
	c.repo = newRepo(t, c.store, nil)
	vol := newTestVolume(t, c.dir, 8<<20, chainBS, 3)
	c.size = vol.size
	// newTestVolume writes data in blocks 0-1 of every 4 and a hole in block 2.
	c.zeroedIdx, c.changedIdx = 4, 9
	for k := range 2 {
		if k == 1 {
			f, err := os.OpenFile(vol.path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			vol.writeAt(f, c.zeroedIdx*chainBS, chainBS, true)
			vol.writeAt(f, c.changedIdx*chainBS+100, 5000, false)
			vol.writeAt(f, 6*chainBS, chainBS, false) // was a hole
			f.Close()
		}
		snap := filepath.Join(c.dir, fmt.Sprintf("snap%d", k))
		vol.snapshot(snap, false)
		o := s3chain.BackupOptions{Chain: c.name, Source: snap, BlockSize: chainBS}
		if k > 0 {
			o.Parent = c.ids[0]
		}
		m, _, err := c.repo.Backup(context.Background(), o)
		if err != nil {
			t.Fatalf("backup %d: %v", k, err)
		}
		c.ids = append(c.ids, m.ID)
		c.shas = append(c.shas, fileSHA(t, snap, vol.size))
	}
	return c
}

// restoreFrom restores backup `from` into a file, copies that file (as a
// node reflinks its local snapshot) and restores backup `to` onto the copy
// with base as its Base; it returns the copy's path and the stats.
func (c *baseChain) restoreFrom(t *testing.T, from, to string, base *s3chain.Image, verify bool) (string, s3chain.RestoreStats) {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(c.dir, "base-"+from)
	if _, err := os.Stat(src); err != nil {
		if _, _, err := c.repo.Restore(ctx, s3chain.RestoreOptions{Chain: c.name, BackupID: from, Destination: src}); err != nil {
			t.Fatalf("restore %s: %v", from, err)
		}
	}
	dst := filepath.Join(c.dir, "to-"+to)
	os.Remove(dst)
	(&testVolume{t: t, path: src}).snapshot(dst, false)
	_, st, err := c.repo.Restore(ctx, s3chain.RestoreOptions{Chain: c.name, BackupID: to, Destination: dst, Base: base, VerifyBase: verify})
	if err != nil {
		t.Fatalf("restore %s from base %s: %v", to, from, err)
	}
	return dst, st
}

func (c *baseChain) image(t *testing.T, id string) *s3chain.Image {
	t.Helper()
	im, err := c.repo.Image(context.Background(), c.name, id)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// TestRestoreFromBase: a restore onto a copy of an earlier backup's image
// fetches only the blocks whose digest differs and ends byte-identical,
// the block zeroed since the base included; the same backward (roll
// back), and a restore of the same backup fetches nothing.
func TestRestoreFromBase(t *testing.T) {
	c := newBaseChain(t)
	full := c.image(t, c.ids[1])
	for _, tc := range []struct{ from, to int }{{0, 1}, {1, 0}, {1, 1}} {
		from, to := c.ids[tc.from], c.ids[tc.to]
		dst, st := c.restoreFrom(t, from, to, c.image(t, from), false)
		if got := fileSHA(t, dst, c.size); got != c.shas[tc.to] {
			t.Errorf("restore %d from base %d: sha256 %s, want %s", tc.to, tc.from, got, c.shas[tc.to])
		}
		// Both images have as many data blocks; two differ (forward: the
		// changed block and the filled hole; back: the changed block and
		// the one zeroed since).
		wantFetched, wantBase := 2, len(full.Blocks)-2
		if tc.from == tc.to {
			wantFetched, wantBase = 0, len(full.Blocks)
		}
		if st.FetchedBlocks != wantFetched || st.BaseBlocks != wantBase {
			t.Errorf("restore %d from base %d fetched %d blocks and took %d from the base; want %d and %d",
				tc.to, tc.from, st.FetchedBlocks, st.BaseBlocks, wantFetched, wantBase)
		}
	}
}

// TestRestoreFromBaseRecord: the base's image kept in a local record still
// seeds a restore after its backup was deleted from the target; a record
// whose list does not match its volume digest is refused.
func TestRestoreFromBaseRecord(t *testing.T) {
	c := newBaseChain(t)
	rec := filepath.Join(c.dir, "b0.image")
	if err := c.image(t, c.ids[0]).WriteFile(rec); err != nil {
		t.Fatal(err)
	}
	c.restoreFrom(t, c.ids[0], c.ids[0], nil, false) // the local snapshot, made while b0 existed
	if err := c.repo.DeleteBackup(context.Background(), c.name, c.ids[0]); err != nil {
		t.Fatal(err)
	}
	im, err := s3chain.ReadImage(rec)
	if err != nil {
		t.Fatal(err)
	}
	dst, st := c.restoreFrom(t, c.ids[0], c.ids[1], im, false)
	if got := fileSHA(t, dst, c.size); got != c.shas[1] || st.FetchedBlocks != 2 {
		t.Errorf("restore from a record of a deleted backup: sha256 %s fetched %d; want %s and 2", got, st.FetchedBlocks, c.shas[1])
	}

	im.Blocks[0].Digest = im.Blocks[1].Digest
	if err := im.WriteFile(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s3chain.ReadImage(rec); !errors.Is(err, s3chain.ErrInvalidManifest) {
		t.Errorf("ReadImage of a tampered record: %v, want ErrInvalidManifest", err)
	}
	_, _, err = c.repo.Restore(context.Background(), s3chain.RestoreOptions{Chain: c.name, BackupID: c.ids[1],
		Destination: filepath.Join(c.dir, "x"), Base: im})
	if !errors.Is(err, s3chain.ErrInvalidManifest) {
		t.Errorf("restore with a tampered base: %v, want ErrInvalidManifest", err)
	}
}

// TestRestoreVerifyBase: with VerifyBase a base block that is not what the
// base image says is fetched again, so the result is the backup's bytes.
func TestRestoreVerifyBase(t *testing.T) {
	c := newBaseChain(t)
	src := filepath.Join(c.dir, "base-"+c.ids[0])
	c.restoreFrom(t, c.ids[0], c.ids[0], nil, false)
	f, err := os.OpenFile(src, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("not the backup"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst, st := c.restoreFrom(t, c.ids[0], c.ids[1], c.image(t, c.ids[0]), true)
	if got := fileSHA(t, dst, c.size); got != c.shas[1] || st.FetchedBlocks != 3 {
		t.Errorf("restore from a damaged base with VerifyBase: sha256 %s fetched %d; want %s and 3", got, st.FetchedBlocks, c.shas[1])
	}
}

// TestRestoreCheckByListOrHead: the existence check before writing lists
// the chain's blocks when that is cheaper than a HEAD each (no Stat), and
// falls back to HEADs when the prefix holds many more objects than the
// restore needs; both name the missing block before writing anything.
func TestRestoreCheckByListOrHead(t *testing.T) {
	for _, junk := range []int{0, 3000} {
		t.Run(fmt.Sprint("junk=", junk), func(t *testing.T) {
			c := newBaseChain(t)
			ctx := context.Background()
			for i := range junk {
				key := s3chain.BlockKey(c.name, fmt.Sprintf("%064x", i+1))
				if err := c.store.Put(ctx, key, []byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			im := c.image(t, c.ids[1])
			missing := s3chain.BlockKey(c.name, im.Blocks[len(im.Blocks)-1].Digest)
			if err := c.store.Delete(ctx, missing); err != nil {
				t.Fatal(err)
			}
			stats := c.store.Calls(storetest.OpStat)
			_, st, err := c.repo.Restore(ctx, s3chain.RestoreOptions{Chain: c.name, BackupID: c.ids[1], Destination: filepath.Join(c.dir, "out")})
			if !errors.Is(err, s3chain.ErrCorruptBlock) || !strings.Contains(err.Error(), missing) || st.WrittenBytes != 0 {
				t.Fatalf("restore with a missing block: %v, wrote %d bytes; want ErrCorruptBlock naming %s first", err, st.WrittenBytes, missing)
			}
			heads := c.store.Calls(storetest.OpStat) - stats
			if (junk == 0) != (heads == 0) {
				t.Errorf("%d junk objects: %d HEADs; want none only when the listing is cheaper", junk, heads)
			}
		})
	}
}
