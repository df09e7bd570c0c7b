package s3chain_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// A chain version 2 made keeps its config and HMAC-SHA256 block names: an
// incremental backup reuses the stored blocks under the same object names
// and gets a version-3 manifest, and every backup, old and new, restores
// byte-identically.
func TestV2ChainKeepsItsDigest(t *testing.T) {
	c := newTestChainV2(t, 1, nil)
	cfg := readConfig(t, c)
	if cfg.FormatVersion != 2 || cfg.Digest != "hmac-sha256" {
		t.Fatalf("config: version %d digest %q, want 2 hmac-sha256", cfg.FormatVersion, cfg.Digest)
	}
	checkVersions(t, c.repo, c, 2)
	before := blockSet(t, c)
	c.vol.change(2, 100<<10)
	m := c.backupNext(t)
	if m.FormatVersion != 3 {
		t.Errorf("new backup has manifest version %d, want 3", m.FormatVersion)
	}
	checkNames(t, m, specNames(t, c.vol, cfg.Secret, "hmac-sha256"), "v2 chain")
	reused := 0
	for _, b := range m.Blocks {
		if before[s3chain.BlockKey(c.name, b.Digest)] {
			reused++
		}
	}
	if reused < len(m.Blocks)-m.DataBlocks || reused == 0 {
		t.Errorf("%d of %d blocks reused, %d changed", reused, len(m.Blocks), m.DataBlocks)
	}
	if after := readConfig(t, c); !bytes.Equal(after.raw, cfg.raw) {
		t.Errorf("config rewritten: %s", after.raw)
	}
	c.checkAll(t)
}

// A new chain is version 3 with BLAKE3 block names; a version-2 chain of
// the very same bytes names none of its blocks alike.
func TestNewChainIsV3BLAKE3(t *testing.T) {
	c := newTestChain(t, 1, nil)
	cfg := readConfig(t, c)
	if cfg.FormatVersion != 3 || cfg.Digest != "blake3" {
		t.Fatalf("config: version %d digest %q, want 3 blake3", cfg.FormatVersion, cfg.Digest)
	}
	checkVersions(t, c.repo, c, 3)
	latest, err := c.repo.Manifest(context.Background(), c.name, "latest")
	if err != nil {
		t.Fatal(err)
	}
	checkNames(t, latest, specNames(t, c.vol, cfg.Secret, "blake3"), "v3 chain")
	old := newTestChainV2(t, 1, nil) // same seed: same volume, same changes
	if !slices.Equal(old.shas, c.shas) {
		t.Fatalf("volumes differ: %v vs %v", old.shas, c.shas)
	}
	v3 := blockSet(t, c)
	for k := range blockSet(t, old) {
		if v3[k] {
			t.Errorf("block %s stored under one name by both chains", k)
		}
	}
	for i, d := range specNames(t, c.vol, cfg.Secret, "hmac-sha256") {
		if v3[s3chain.BlockKey(c.name, d)] {
			t.Errorf("block %d has its HMAC-SHA256 name", i)
		}
	}
	c.checkAll(t)
}

// One encrypted target holds a version-1, a version-2 and a version-3
// chain: a fresh Repo lists all three, sees each one's manifests, adds a
// version-3 manifest to each, and restores every backup of each.
func TestTargetWithV1V2V3Chains(t *testing.T) {
	key := testKey(21)
	st := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, st, key)
	chains := map[int]*testChain{}
	for v, name := range map[int]string{1: "team-a/v1", 2: "team-a/v2", 3: "team-b/v3"} {
		chains[v] = &testChain{store: st, repo: r, key: key, dir: t.TempDir(), name: name}
		chains[v].fill(t, 1, v)
	}
	fresh := newRepo(t, st, key)
	got, err := fresh.Chains(context.Background())
	if want := []string{"team-a/v1", "team-a/v2", "team-b/v3"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("chains %v, %v; want %v", got, err, want)
	}
	for v, c := range chains {
		c.repo = fresh
		checkVersions(t, fresh, c, v)
		c.vol.change(2, 100<<10)
		if m := c.backupNext(t); m.FormatVersion != 3 {
			t.Errorf("chain %s: new manifest version %d, want 3", c.name, m.FormatVersion)
		}
		c.checkAll(t)
	}
}
