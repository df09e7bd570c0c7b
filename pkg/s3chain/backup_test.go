package s3chain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// testChain is a chain of backups in an in-memory store, made without a
// base snapshot (digest comparison), with the sha256 of every snapshot.
type testChain struct {
	store *storetest.Faulty
	repo  *s3chain.Repo
	key   []byte
	dir   string
	name  string
	ids   []string
	shas  []string
	sizes []int64
	vol   *testVolume // the volume as of the last backup
}

const chainBS = 256 << 10

// newTestChain makes a full backup and n incrementals of an 8 MiB volume
// in 256 KiB blocks; sizes, if given, resizes the volume before each backup
// (exercising shrink and growth).
func newTestChain(t *testing.T, n int, key []byte, sizes ...int64) *testChain {
	return buildTestChain(t, n, key, s3chain.FormatVersion, sizes...)
}

// newTestChainV1 makes the same chain as version 1 wrote it: a version-1
// config and hash-linked delta manifests.
func newTestChainV1(t *testing.T, n int, key []byte, sizes ...int64) *testChain {
	return buildTestChain(t, n, key, 1, sizes...)
}

// newTestChainV2 makes the same chain as version 2 wrote it: a version-2
// config (HMAC-SHA256 block names) and version-2 manifests.
func newTestChainV2(t *testing.T, n int, key []byte, sizes ...int64) *testChain {
	return buildTestChain(t, n, key, 2, sizes...)
}

func buildTestChain(t *testing.T, n int, key []byte, version int, sizes ...int64) *testChain {
	c := &testChain{store: storetest.NewFaulty(storetest.NewMem()), key: key, dir: t.TempDir(), name: "team-a/db-0"}
	c.repo = newRepo(t, c.store, key)
	c.fill(t, n, version, sizes...)
	return c
}

// fill makes c's chain as format version wrote it (1, 2, or the current
// one): a full backup and n incrementals of a new volume in c.dir.
func (c *testChain) fill(t *testing.T, n, version int, sizes ...int64) {
	ctx := context.Background()
	switch version {
	case 1:
		if err := s3chain.CreateV1ConfigForTest(ctx, c.repo, c.name, chainBS); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := s3chain.DowngradeChainForTest(ctx, c.repo, c.name); err != nil {
				t.Fatal(err)
			}
		}()
	case 2:
		if err := s3chain.CreateV2ConfigForTest(ctx, c.repo, c.name, chainBS); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := s3chain.DowngradeChainV2ForTest(ctx, c.repo, c.name); err != nil {
				t.Fatal(err)
			}
		}()
	}
	c.vol = newTestVolume(t, c.dir, 8<<20, chainBS, 42)
	for k := 0; k <= n; k++ {
		if k > 0 {
			c.vol.change(4, 300<<10)
		}
		if k < len(sizes) {
			c.vol.size = sizes[k]
			if err := os.Truncate(c.vol.path, c.vol.size); err != nil {
				t.Fatal(err)
			}
		}
		c.backupNext(t)
	}
}

// backupNext backs up the volume as it is now, with the chain's last
// backup (if any) as parent, and records it.
func (c *testChain) backupNext(t *testing.T) *s3chain.Manifest {
	t.Helper()
	snap := filepath.Join(c.dir, fmt.Sprintf("snap%d", len(c.ids)))
	c.vol.snapshot(snap, false)
	defer os.Remove(snap)
	o := s3chain.BackupOptions{Chain: c.name, Source: snap, BlockSize: chainBS, Workers: 3}
	if len(c.ids) > 0 {
		o.Parent = c.ids[len(c.ids)-1]
	}
	m, _, err := c.repo.Backup(context.Background(), o)
	if err != nil {
		t.Fatalf("backup %d: %v", len(c.ids), err)
	}
	c.ids = append(c.ids, m.ID)
	c.shas = append(c.shas, fileSHA(t, snap, c.vol.size))
	c.sizes = append(c.sizes, c.vol.size)
	return m
}

// checkAll restores every backup except those in gone and compares bytes.
func (c *testChain) checkAll(t *testing.T, gone ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, g := range gone {
		skip[g] = true
	}
	for k, id := range c.ids {
		if skip[id] {
			continue
		}
		if err := c.repo.Verify(context.Background(), c.name, id, true); err != nil {
			t.Errorf("verify %s: %v", id, err)
		}
		got, m, _ := restoreSHA(t, c.repo, c.name, id, c.dir)
		if got != c.shas[k] || m.SizeBytes != c.sizes[k] {
			t.Errorf("restore %s: sha256 %s size %d, want %s size %d", id, got, m.SizeBytes, c.shas[k], c.sizes[k])
		}
	}
}

// blockIndices maps each block key that backup id's image uses to the
// block indices that use it, computed here independently of the engine:
// newest manifest wins, bounded by the smallest volume on the way.
func (c *testChain) blockIndices(t *testing.T, id string) map[string][]int64 {
	ctx := context.Background()
	m, err := c.repo.Manifest(ctx, c.name, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	out := map[string][]int64{}
	limit := m.NumBlocks()
	for {
		limit = min(limit, m.NumBlocks())
		for _, b := range m.Blocks {
			if b.Index < limit && !seen[b.Index] {
				seen[b.Index] = true
				if b.Digest != "" {
					k := s3chain.BlockKey(c.name, b.Digest)
					out[k] = append(out[k], b.Index)
				}
			}
		}
		if m.Full() {
			return out
		}
		if m, err = c.repo.Manifest(ctx, c.name, m.ParentID); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChainRoundTripDigestTracking(t *testing.T) {
	c := newTestChain(t, 5, testKey(9))
	c.checkAll(t)
	ms, err := c.repo.Backups(context.Background(), c.name)
	if err != nil || len(ms) != 6 {
		t.Fatalf("backups: %d, %v", len(ms), err)
	}
	for k, m := range ms {
		if m.ID != c.ids[k] || (k > 0) != (m.ParentID == c.ids[max(k-1, 0)]) {
			t.Errorf("backup %d: id %s parent %s", k, m.ID, m.ParentID)
		}
	}
	chains, err := c.repo.Chains(context.Background())
	if err != nil || len(chains) != 1 || chains[0] != c.name {
		t.Errorf("chains %v, %v", chains, err)
	}
}

// TestChainResize shrinks the volume to a partial block and grows it back:
// blocks the shrink cut off must not come back from older backups, also
// after the shrunk backup is deleted.
func TestChainResize(t *testing.T) {
	c := newTestChain(t, 3, nil, 8<<20, 4<<20+100<<10, 8<<20, 6<<20)
	c.checkAll(t)
	if err := c.repo.DeleteBackup(context.Background(), c.name, c.ids[1]); err != nil {
		t.Fatal(err)
	}
	c.checkAll(t, c.ids[1])
}
