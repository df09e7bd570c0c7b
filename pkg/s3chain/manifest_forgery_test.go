package s3chain_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// Issue 12, case 6: block names and manifest MACs used to be one HMAC under
// one key, so a bucket writer who got one block of chosen bytes backed up
// could use its object name as the MAC of a forged manifest of exactly
// those bytes, and an encrypted chain's @latest restored the forgery.
// Version 2 keys the two with different derived keys: the forgery fails.
func TestForgedManifestFromBlockName(t *testing.T) {
	ctx := context.Background()
	store := storetest.NewMem()
	repo := newRepo(t, store, testKey(7))
	dir := t.TempDir()
	const chain = "lab/secret"
	// The victim's real backup.
	vol := newTestVolume(t, dir, 1<<20, s3chain.MinBlockSize, 11)
	real, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: vol.path, BlockSize: s3chain.MinBlockSize})
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's forgery: the real blocks in another order, padded (in
	// a free-text field) to exactly one block, MAC still empty.
	forged := *real
	forged.ID, forged.MAC, forged.Node = "zz-forged", "", ""
	forged.CreatedAt = real.CreatedAt.Add(1e9)
	forged.Blocks = append([]s3chain.BlockRef(nil), real.Blocks...)
	for i := range forged.Blocks {
		forged.Blocks[i].Digest = real.Blocks[len(real.Blocks)-1-i].Digest
	}
	forged.Node = strings.Repeat("a", int(s3chain.MinBlockSize)-len(forged.Encode()))
	payload := forged.Encode()
	if len(payload) != int(s3chain.MinBlockSize) {
		t.Fatalf("forgery is %d bytes", len(payload))
	}
	// The attacker gets exactly those bytes backed up as one block ...
	src := filepath.Join(dir, "chosen")
	if err := os.WriteFile(src, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	chosen, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: src})
	if err != nil || len(chosen.Blocks) != 1 {
		t.Fatalf("backup of chosen bytes: %v", err)
	}
	// ... and stores the forgery with that block's name as its MAC.
	forged.MAC = chosen.Blocks[0].Digest
	if err := store.Put(ctx, s3chain.ManifestKey(chain, forged.ID), forged.Encode()); err != nil {
		t.Fatal(err)
	}
	_, err = repo.Manifest(ctx, chain, forged.ID)
	if !errors.Is(err, s3chain.ErrInvalidManifest) || !strings.Contains(err.Error(), "MAC") {
		t.Fatalf("forged manifest: %v, want ErrInvalidManifest (MAC)", err)
	}
	if _, err := repo.Manifest(ctx, chain, "latest"); !errors.Is(err, s3chain.ErrInvalidManifest) {
		t.Fatalf("@latest with a forgery in the chain: %v, want ErrInvalidManifest", err)
	}
}

// Issue 12, case 7: an object larger than its kind allows fails fast with a
// named error instead of being read into memory: a block object over the
// chain's block size plus framing, a manifest over its bound.
func TestOversizeObjectsRefused(t *testing.T) {
	c := newTestChain(t, 1, nil)
	ctx := context.Background()
	m, err := c.repo.Manifest(ctx, c.name, c.ids[1])
	if err != nil {
		t.Fatal(err)
	}
	key := s3chain.BlockKey(c.name, m.Blocks[0].Digest)
	if err := c.store.Put(ctx, key, make([]byte, 4*chainBS)); err != nil {
		t.Fatal(err)
	}
	_, err = restoreErr(t, c.repo, c, c.ids[1])
	if !errors.Is(err, s3chain.ErrCorruptBlock) || !errors.Is(err, store.ErrObjectTooLarge) {
		t.Fatalf("restore with an oversize block object: %v", err)
	}
	if err := c.repo.Verify(ctx, c.name, c.ids[1], true); !errors.Is(err, store.ErrObjectTooLarge) {
		t.Fatalf("deep verify with an oversize block object: %v", err)
	}
	huge := make([]byte, 64<<20)
	if err := c.store.Put(ctx, s3chain.ManifestKey(c.name, c.ids[0]), huge); err != nil {
		t.Fatal(err)
	}
	if _, err := c.repo.Manifest(ctx, c.name, c.ids[0]); !errors.Is(err, s3chain.ErrInvalidManifest) || !errors.Is(err, store.ErrObjectTooLarge) {
		t.Fatalf("oversize manifest: %v", err)
	}
}
