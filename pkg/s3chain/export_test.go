package s3chain

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"time"
)

// CreateV1ConfigForTest writes the config a version-1 writer would have
// made for chain (plain digest key, or sealed with r's repository key), so
// that tests can build chains as version 1 left them.
func CreateV1ConfigForTest(ctx context.Context, r *Repo, chain string, blockSize int64) error {
	key := make([]byte, digestKeyLen)
	_, _ = rand.Read(key)
	cfg := &chainConfig{FormatVersion: 1, Chain: chain, BlockSize: blockSize, CreatedAt: time.Now().UTC(),
		Digest: digestHMAC, Compression: "zstd", Encryption: encNone, DigestKey: key}
	if r.aead != nil {
		cfg.Encryption = encAESGCM
		cfg.DigestKey = seal(r.aead, key, []byte(digestKeyAAD+chain))
	}
	data, _ := json.Marshal(cfg)
	return r.store.Put(ctx, configKey(chain), data)
}

// CreateV2ConfigForTest writes the config a version-2 writer made for
// chain: formatVersion 2, block digest HMAC-SHA256, and a random secret
// (plain, or sealed with r's wrap key as version 2 sealed it).
func CreateV2ConfigForTest(ctx context.Context, r *Repo, chain string, blockSize int64) error {
	return createConfigForTest(ctx, r, chain, blockSize, 2, digestHMAC)
}

// createConfigForTest writes a config of version (2 or 3) and digest with
// a random secret, without state records (FORMAT.md §7.4).
func createConfigForTest(ctx context.Context, r *Repo, chain string, blockSize int64, version int, digest string) error {
	secret := make([]byte, digestKeyLen)
	_, _ = rand.Read(secret)
	cfg := &chainConfig{FormatVersion: version, Chain: chain, BlockSize: blockSize, CreatedAt: time.Now().UTC(),
		Digest: digest, Compression: "zstd", Encryption: encNone, Secret: secret}
	if r.wrap != nil {
		cfg.Encryption = encAESGCM
		cfg.Secret = seal(r.wrap, secret, []byte(secretAAD+chain))
	}
	data, _ := json.Marshal(cfg)
	return r.store.Put(ctx, configKey(chain), data)
}

// DowngradeChainV2ForTest rewrites every version-3 manifest of a chain as
// the version-2 manifest a version-2 writer made of the same backup: the
// layouts are one (FORMAT.md §4.1), so only formatVersion and the MAC
// change.
func DowngradeChainV2ForTest(ctx context.Context, r *Repo, chain string) error {
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return err
	}
	all, err := r.Backups(ctx, chain)
	if err != nil {
		return err
	}
	for _, m := range all {
		if m.FormatVersion != 3 {
			continue
		}
		d := *m
		d.FormatVersion = 2
		cfg.sign(&d)
		if err := r.store.Put(ctx, manifestKey(chain, d.ID), d.Encode()); err != nil {
			return err
		}
	}
	return nil
}

// DowngradeChainForTest rewrites every manifest of a chain whose config is
// version 1 as the hash-linked delta manifest version 1 wrote: each lists
// the blocks that differ from its parent's image (zero entries for blocks
// that became zero), links to the parent's digest and carries a MAC under
// the digest key.
func DowngradeChainForTest(ctx context.Context, r *Repo, chain string) error {
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return err
	}
	all, err := r.Backups(ctx, chain)
	if err != nil {
		return err
	}
	images := map[string][]digest{}
	v1 := map[string]*Manifest{}
	for _, m := range all {
		_, _, image, err := r.resolve(ctx, chain, m.ID)
		if err != nil {
			return err
		}
		images[m.ID] = image
		d := *m
		d.FormatVersion, d.Blocks, d.DataBlocks, d.ZeroBlocks, d.DataBytes = 1, []BlockRef{}, 0, 0, 0
		prev := make([]digest, len(image))
		if p := v1[m.ParentID]; p != nil {
			copy(prev, images[p.ID])
			d.ParentDigest = p.Digest()
		} else {
			d.ParentID = ""
		}
		for i := range image {
			if image[i] == prev[i] {
				continue
			}
			ref := BlockRef{Index: int64(i)}
			if image[i].isZero() {
				d.ZeroBlocks++
			} else {
				ref.Digest = image[i].String()
				d.DataBlocks++
				d.DataBytes += d.blockLen(int64(i))
			}
			d.Blocks = append(d.Blocks, ref)
		}
		cfg.sign(&d)
		if err := r.store.Put(ctx, manifestKey(chain, d.ID), d.Encode()); err != nil {
			return err
		}
		v1[d.ID] = &d
	}
	return nil
}

// ConfigKeyForTest returns the object key of chain's config (FORMAT.md §2).
func ConfigKeyForTest(chain string) string { return configKey(chain) }

// SetLockMarginForTest sets the margin gc adds to retain-until dates (5
// min) until the test ends, so that a test need not wait that long.
func SetLockMarginForTest(t interface{ Cleanup(func()) }, d time.Duration) {
	old := lockMargin
	lockMargin = d
	t.Cleanup(func() { lockMargin = old })
}

// CreateV3ConfigWithoutStatesForTest writes the config a version-3 writer
// made before state records (FORMAT.md §7.4): formatVersion 3, BLAKE3 block
// names, no readyRecords, so every manifest of the chain is listed.
func CreateV3ConfigWithoutStatesForTest(ctx context.Context, r *Repo, chain string, blockSize int64) error {
	return createConfigForTest(ctx, r, chain, blockSize, 3, digestBLAKE3)
}

// StateKeyForTest returns the key of the state record of backup id of
// chain (FORMAT.md §7.4).
func StateKeyForTest(chain, id string) string { return stateKey(chain, id) }

// SetConfirmListBudgetForTest makes the confirm's listing of a chain's
// blocks stop after n keys (0: at once), so that it asks about each block
// with a HEAD as for a chain too large to list, until t ends.
func SetConfirmListBudgetForTest(t interface{ Cleanup(func()) }, n int) {
	old := confirmListBudget
	confirmListBudget = func(int, int) int { return n }
	t.Cleanup(func() { confirmListBudget = old })
}

// RestoreHooks delay, fail and watch a Repo's restores (restore_kill_test.go).
type RestoreHooks struct {
	Write      func(block int64) error // before each block write; an error fails it
	Written    func(block int64)       // after each block write
	BeforeSync func()                  // before a checkpoint flush's fsync of the destination
	AfterSync  func(err error)         // after it
	Buffers    func(n int)             // block buffers allocated so far, after each allocation
	FlushEvery time.Duration           // least time between periodic checkpoint flushes (default 1 s)
}

// SetRestoreHooksForTest installs h for every later restore of r.
func SetRestoreHooksForTest(r *Repo, h RestoreHooks) {
	r.hooks = &restoreHooks{write: h.Write, written: h.Written, beforeSync: h.BeforeSync, afterSync: h.AfterSync,
		buffers: h.Buffers, flushEvery: h.FlushEvery}
}
