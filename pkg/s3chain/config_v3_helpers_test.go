package s3chain_test

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"os"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// storedConfig is what a test reads of a chain's config object.
type storedConfig struct {
	FormatVersion int    `json:"formatVersion"`
	Digest        string `json:"digest"`
	Secret        []byte `json:"secret"`
	raw           []byte
}

func readConfig(t *testing.T, c *testChain) storedConfig {
	t.Helper()
	data, err := c.store.Get(context.Background(), s3chain.ConfigKeyForTest(c.name))
	var cfg storedConfig
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		t.Fatalf("config of %s: %v", c.name, err)
	}
	cfg.raw = data
	return cfg
}

// specNames computes, from FORMAT.md alone, the block names of the
// volume's non-zero blocks: algo ("hmac-sha256" or "blake3") keyed by
// HKDF-SHA256(secret, label) (§3.1, §6). Only for unencrypted chains,
// whose config holds the plain secret.
func specNames(t *testing.T, v *testVolume, secret []byte, algo string) map[int64]string {
	t.Helper()
	label := map[string]string{"hmac-sha256": "chainvol v2 block names", "blake3": "chainvol v3 block names"}[algo]
	key, err := hkdf.Key(sha256.New, secret, nil, label, 32)
	if err != nil || len(secret) != 32 {
		t.Fatalf("names key: %v (secret %d bytes)", err, len(secret))
	}
	f, err := os.Open(v.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int64]string{}
	buf := make([]byte, v.bs)
	for i := int64(0); i*v.bs < v.size; i++ {
		n, err := io.ReadFull(io.NewSectionReader(f, i*v.bs, v.bs), buf)
		if err != nil && err != io.ErrUnexpectedEOF {
			t.Fatal(err)
		}
		if bytes.Count(buf[:n], []byte{0}) == n {
			continue
		}
		var h hash.Hash = hmac.New(sha256.New, key)
		if algo == "blake3" {
			h, _ = blake3.NewKeyed(key)
		}
		h.Write(buf[:n])
		out[i] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// checkNames fails unless m's block list is exactly want.
func checkNames(t *testing.T, m *s3chain.Manifest, want map[int64]string, what string) {
	t.Helper()
	if len(m.Blocks) != len(want) {
		t.Fatalf("%s: backup %s lists %d blocks, the volume has %d non-zero", what, m.ID, len(m.Blocks), len(want))
	}
	for _, b := range m.Blocks {
		if want[b.Index] != b.Digest {
			t.Fatalf("%s: block %d named %s, FORMAT.md gives %s", what, b.Index, b.Digest, want[b.Index])
		}
	}
}

// blockSet returns the set of block object keys of c's chain.
func blockSet(t *testing.T, c *testChain) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, k := range blockKeys(t, c) {
		keys[k] = true
	}
	return keys
}

// checkVersions fails unless every backup of c's chain has manifest
// version want.
func checkVersions(t *testing.T, r *s3chain.Repo, c *testChain, want int) {
	t.Helper()
	ms, err := r.Backups(context.Background(), c.name)
	if err != nil || len(ms) == 0 {
		t.Fatalf("backups of %s: %d, %v", c.name, len(ms), err)
	}
	for _, m := range ms {
		if m.FormatVersion != want {
			t.Errorf("chain %s backup %s: manifest version %d, want %d", c.name, m.ID, m.FormatVersion, want)
		}
	}
}
