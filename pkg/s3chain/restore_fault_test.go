package s3chain_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// restoreErr restores id into a fresh path and returns the error, checking
// that a failed restore reports no manifest.
func restoreErr(t *testing.T, r *s3chain.Repo, c *testChain, id string) (string, error) {
	t.Helper()
	dest := filepath.Join(c.dir, "destination")
	os.Remove(dest)
	m, _, err := r.Restore(context.Background(), s3chain.RestoreOptions{Chain: c.name, BackupID: id, Destination: dest, Workers: 2})
	if err != nil && m != nil {
		t.Errorf("failed restore returned manifest %s", m.ID)
	}
	return dest, err
}

func TestRestoreCorruptBlock(t *testing.T) {
	c := newTestChain(t, 3, testKey(3))
	latest := c.ids[len(c.ids)-1]
	for key, indices := range c.blockIndices(t, latest) {
		c.store.Clear()
		c.store.CorruptGets(func(k string) bool { return k == key })
		_, err := restoreErr(t, c.repo, c, latest)
		if !errors.Is(err, s3chain.ErrCorruptBlock) || !strings.Contains(err.Error(), fmt.Sprintf("block %d ", indices[0])) {
			t.Fatalf("corrupt %s (blocks %v): %v", key, indices, err)
		}
		if err := c.repo.Verify(context.Background(), c.name, latest, true); !errors.Is(err, s3chain.ErrCorruptBlock) {
			t.Fatalf("deep verify with corrupt %s: %v", key, err)
		}
	}
	c.store.Clear()
	// A missing block is named too, by a shallow verify as well.
	for key, indices := range c.blockIndices(t, latest) {
		if err := c.store.Delete(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		_, err := restoreErr(t, c.repo, c, latest)
		if !errors.Is(err, s3chain.ErrCorruptBlock) || !errors.Is(err, store.ErrObjectNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("block %d ", indices[0])) {
			t.Fatalf("missing %s: %v", key, err)
		}
		if err := c.repo.Verify(context.Background(), c.name, latest, false); !errors.Is(err, s3chain.ErrCorruptBlock) {
			t.Fatalf("verify with missing block: %v", err)
		}
		break
	}
}

// A version-2 manifest stands alone: losing a parent's manifest (or the
// parent being deleted, or a bucket losing it) costs no other backup.
func TestRestoreMissingParentManifestV2(t *testing.T) {
	c := newTestChain(t, 4, nil)
	if err := c.store.Delete(context.Background(), s3chain.ManifestKey(c.name, c.ids[2])); err != nil {
		t.Fatal(err)
	}
	c.checkAll(t, c.ids[2])
	if _, err := restoreErr(t, c.repo, c, c.ids[2]); !errors.Is(err, s3chain.ErrBackupNotFound) {
		t.Errorf("restore of the deleted backup: %v", err)
	}
}

func TestRestoreMissingManifest(t *testing.T) {
	c := newTestChainV1(t, 4, nil)
	mid := c.ids[2]
	if err := c.store.Delete(context.Background(), s3chain.ManifestKey(c.name, mid)); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.ids[3:] {
		dest, err := restoreErr(t, c.repo, c, id)
		if !errors.Is(err, s3chain.ErrChainBroken) || !strings.Contains(err.Error(), `"`+mid+`"`) {
			t.Fatalf("restore %s without %s: %v", id, mid, err)
		}
		if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
			t.Errorf("restore %s created its destination before failing", id)
		}
	}
	if _, err := restoreErr(t, c.repo, c, mid); !errors.Is(err, s3chain.ErrBackupNotFound) {
		t.Errorf("restore of the deleted backup: %v", err)
	}
	// Older backups do not depend on it.
	if got, _, _ := restoreSHA(t, c.repo, c.name, c.ids[1], c.dir); got != c.shas[1] {
		t.Errorf("restore %s: sha256 %s, want %s", c.ids[1], got, c.shas[1])
	}
}

func TestRestoreBrokenHashLink(t *testing.T) {
	c := newTestChainV1(t, 2, nil)
	ctx := context.Background()
	key := s3chain.ManifestKey(c.name, c.ids[1])
	data, _ := c.store.Get(ctx, key)
	// A changed byte fails the manifest's MAC.
	forged := []byte(strings.Replace(string(data), `"node":""`, `"node":"x"`, 1))
	if err := c.store.Put(ctx, key, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := restoreErr(t, c.repo, c, c.ids[2]); !errors.Is(err, s3chain.ErrInvalidManifest) || !strings.Contains(err.Error(), c.ids[1]) {
		t.Fatalf("restore with a changed parent: %v", err)
	}
	// Re-signed with the chain's digest key (readable here because the
	// chain is not encrypted; FORMAT.md §4), only the hash link can tell.
	var cfg struct{ DigestKey []byte }
	cfgData, _ := c.store.Get(ctx, "chains/team-a_2fdb-0.json")
	if err := json.Unmarshal(cfgData, &cfg); err != nil || len(cfg.DigestKey) != 32 {
		t.Fatalf("config: %v", err)
	}
	m, err := s3chain.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	m.Node, m.MAC = "x", ""
	mac := hmac.New(sha256.New, cfg.DigestKey)
	mac.Write(m.Encode())
	m.MAC = hex.EncodeToString(mac.Sum(nil))
	if err := c.store.Put(ctx, key, m.Encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.repo.Manifest(ctx, c.name, c.ids[1]); err != nil {
		t.Fatalf("re-signed manifest does not load: %v", err)
	}
	_, err = restoreErr(t, c.repo, c, c.ids[2])
	if !errors.Is(err, s3chain.ErrChainBroken) || !strings.Contains(err.Error(), `"`+c.ids[1]+`"`) || !strings.Contains(err.Error(), "hash link") {
		t.Fatalf("restore with a re-signed parent: %v", err)
	}
}

func TestRestoreWrongKey(t *testing.T) {
	c := newTestChain(t, 1, testKey(5))
	for name, key := range map[string][]byte{"other key": testKey(6), "no key": nil} {
		r := newRepo(t, c.store, key)
		dest, err := restoreErr(t, r, c, "latest")
		if !errors.Is(err, s3chain.ErrWrongKey) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %v", name, err)
		}
		if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
			t.Errorf("%s: destination created", name)
		}
	}
	if _, err := s3chain.NewRepo(c.store, s3chain.RepoOptions{EncryptionKey: []byte("short")}); !errors.Is(err, s3chain.ErrInvalidOptions) {
		t.Errorf("short key: %v", err)
	}
}

func TestRestoreDestinationTooSmall(t *testing.T) {
	c := newTestChain(t, 1, nil)
	dest := filepath.Join(c.dir, "small")
	orig := []byte("keep me")
	if err := os.WriteFile(dest, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(dest, c.sizes[1]-1); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.repo.Restore(context.Background(), s3chain.RestoreOptions{Chain: c.name, BackupID: "latest", Destination: dest})
	if !errors.Is(err, s3chain.ErrDestinationTooSmall) || !strings.Contains(err.Error(), fmt.Sprint(c.sizes[1])) {
		t.Fatalf("restore into a small destination: %v", err)
	}
	got, _ := os.ReadFile(dest)
	if string(got[:len(orig)]) != string(orig) || int64(len(got)) != c.sizes[1]-1 {
		t.Errorf("the small destination was changed")
	}
}
