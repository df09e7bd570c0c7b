package s3chain

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// chainConfig is the chain's config object, chains/<chain>.json (FORMAT.md
// §3): the fixed block size, block digest and the chain's sealed or plain
// secret. Version 1 stores the digest key itself; versions 2 and 3 a secret
// from which every key is derived (keys.go).
type chainConfig struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	BlockSize     int64     `json:"blockSize"`
	CreatedAt     time.Time `json:"createdAt"`
	Digest        string    `json:"digest"`      // configDigest(FormatVersion)
	Compression   string    `json:"compression"` // always "zstd"
	Encryption    string    `json:"encryption"`  // "none" or "aes-256-gcm"
	// DigestKey (version 1: the digest key) or Secret (2, 3): 32 bytes,
	// plain when the chain is not encrypted, else sealed (nonce || AES-GCM).
	DigestKey []byte `json:"digestKey,omitempty"`
	Secret    []byte `json:"secret,omitempty"`
	// Owner names the source the chain is the history of (its first
	// backup's writer, BackupOptions.Owner); "" for chains made without
	// one, or before version 3 (FORMAT.md §3).
	Owner string `json:"owner,omitempty"`
	// ReadyRecords: the chain's manifests are backups only once a state
	// record says they are ready (FORMAT.md §7.5); set in every chain this
	// version creates, absent (every manifest a backup) in older ones.
	ReadyRecords bool `json:"readyRecords,omitempty"`

	keys chainKeys
	raw  []byte // the stored bytes, to notice a config replaced under us
}

const (
	encNone        = "none"
	encAESGCM      = "aes-256-gcm"
	digestKeyAAD   = "chainvol digest key for chain "
	secretAAD      = "chainvol v2 secret of chain "
	digestKeyLen   = 32
	maxConfigBytes = 64 << 10
)

// newChain is what a backup asks of a chain it may create: a block size
// (bytes; 0 = the chain's, or DefaultBlockSize for a new chain) and the
// owner recorded in a new config (FORMAT.md §3; "" for none).
type newChain struct {
	blockSize int64
	owner     string
}

// chain returns the opened config of chain. With create set, a chain that
// has none gets one made from it. Errors: ErrBackupNotFound (no such chain,
// create nil), ErrWrongKey, ErrFormatVersion, ErrInvalidOptions (a block
// size that differs from the chain's).
func (r *Repo) chain(ctx context.Context, chain string, create *newChain) (*chainConfig, error) {
	if err := ValidChainName(chain); err != nil {
		return nil, err
	}
	r.mu.Lock()
	cfg := r.configs[chain]
	r.mu.Unlock()
	if cfg == nil {
		var err error
		if cfg, err = r.loadConfig(ctx, chain, create); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.configs[chain] = cfg
		r.mu.Unlock()
	}
	if create != nil && create.blockSize != 0 && create.blockSize != cfg.BlockSize {
		return nil, fmt.Errorf("%w: block size %d bytes differs from chain %q's %d", ErrInvalidOptions, create.blockSize, chain, cfg.BlockSize)
	}
	return cfg, nil
}

func (r *Repo) loadConfig(ctx context.Context, chain string, create *newChain) (*chainConfig, error) {
	data, err := r.store.GetMax(ctx, configKey(chain), maxConfigBytes)
	switch {
	case errors.Is(err, store.ErrObjectNotFound) && create != nil:
		return r.createChain(ctx, chain, *create)
	case errors.Is(err, store.ErrObjectNotFound):
		return nil, fmt.Errorf("%w: chain %q has no backups", ErrBackupNotFound, chain)
	case err != nil:
		return nil, fmt.Errorf("read config of chain %q: %w", chain, err)
	}
	return r.openConfig(chain, data)
}

// createChain writes a new config of FormatVersion (block digest BLAKE3)
// with PutIfAbsent, so that two writers creating one chain agree on its
// secret: the loser reads the winner's. A store without atomic create is
// refused (errNoConditionalWrites): nothing is written.
func (r *Repo) createChain(ctx context.Context, chain string, spec newChain) (*chainConfig, error) {
	blockSize := spec.blockSize
	if blockSize == 0 {
		blockSize = DefaultBlockSize
	}
	if err := checkBlockSize(blockSize); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	cfg := &chainConfig{FormatVersion: FormatVersion, Chain: chain, BlockSize: blockSize,
		CreatedAt: time.Now().UTC(), Digest: configDigest(FormatVersion), Compression: "zstd", Encryption: encNone,
		Owner: spec.owner, ReadyRecords: true}
	secret := make([]byte, digestKeyLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	cfg.Secret = secret
	if r.wrap != nil {
		cfg.Encryption = encAESGCM
		cfg.Secret = seal(r.wrap, secret, []byte(secretAAD+chain))
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	rctx, err := r.retainedCtx(ctx) // extended by every backup's confirm
	if err != nil {
		return nil, err
	}
	err = r.store.PutIfAbsent(rctx, configKey(chain), data)
	if errors.Is(err, store.ErrNotAtomic) {
		return nil, errNoConditionalWrites(chain, err)
	}
	if err != nil && !errors.Is(err, store.ErrObjectExists) {
		return nil, fmt.Errorf("write config of chain %q: %w", chain, err)
	}
	// Whoever won, the stored config is the chain's.
	return r.loadConfig(ctx, chain, nil)
}

// errNoConditionalWrites is the refusal (of createChain and of a manifest
// commit) on a store whose
// PutIfAbsent answered cause (a store.ErrNotAtomic): it wraps
// store.ErrBadTarget and cause. Without atomic create two writers can make
// two configs (two secrets) for one chain, and a backup made with the
// loser's keys would not restore; the old read-back fallback relied on
// request timing. The fix is on the target's side, so the message names it.
func errNoConditionalWrites(chain string, cause error) error {
	return fmt.Errorf("%w: chain %q cannot be written: the target ignores conditional writes (S3 PutObject with If-None-Match: *), "+
		"which chainvol needs to write backups safely; use an S3 server that supports them (AWS S3, MinIO since 2024, versitygw), "+
		"or for a directory target a filesystem with hard links: %w", store.ErrBadTarget, chain, cause)
}

// openConfig decodes a config object and opens its keys.
func (r *Repo) openConfig(chain string, data []byte) (*chainConfig, error) {
	cfg := &chainConfig{raw: data}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("%w: config of chain %q: %v", ErrInvalidManifest, chain, err)
	}
	if want := configDigest(cfg.FormatVersion); want == "" || cfg.Digest != want || cfg.Compression != "zstd" {
		return nil, fmt.Errorf("%w: chain %q config has version %d (digest %q, %s); this reader knows 1 and 2 with %q, %d with %q",
			ErrFormatVersion, chain, cfg.FormatVersion, cfg.Digest, cfg.Compression, digestHMAC, FormatVersion, digestBLAKE3)
	}
	if cfg.Chain != chain || checkBlockSize(cfg.BlockSize) != nil {
		return nil, fmt.Errorf("%w: config of chain %q names chain %q, block size %d", ErrInvalidManifest, chain, cfg.Chain, cfg.BlockSize)
	}
	secret, err := r.openSecret(cfg)
	if err != nil {
		return nil, err
	}
	if len(secret) != digestKeyLen {
		return nil, fmt.Errorf("%w: chain %q secret is %d bytes", ErrInvalidManifest, chain, len(secret))
	}
	if cfg.FormatVersion == 1 {
		cfg.keys = keysV1(secret, r.aead)
		return cfg, nil
	}
	cfg.keys, err = keysV2(secret, cfg.Digest, cfg.Encryption == encAESGCM)
	return cfg, err
}

// openSecret returns the chain's plain digest key (v1) or secret (v2, v3:
// sealed alike, so version 3 keeps version 2's wrap key and AAD).
func (r *Repo) openSecret(cfg *chainConfig) ([]byte, error) {
	stored, aead, aad := cfg.DigestKey, r.aead, digestKeyAAD+cfg.Chain
	if cfg.FormatVersion >= 2 {
		stored, aead, aad = cfg.Secret, r.wrap, secretAAD+cfg.Chain
	}
	switch {
	case cfg.Encryption == encNone && aead == nil:
		return stored, nil
	case cfg.Encryption == encNone:
		return nil, fmt.Errorf("%w: chain %q is not encrypted but a key was given", ErrWrongKey, cfg.Chain)
	case cfg.Encryption == encAESGCM && aead == nil:
		return nil, fmt.Errorf("%w: chain %q is encrypted and no key was given", ErrWrongKey, cfg.Chain)
	case cfg.Encryption == encAESGCM:
		key, err := open(aead, slices.Clone(stored), []byte(aad))
		if err != nil {
			return nil, fmt.Errorf("%w: the key does not open chain %q", ErrWrongKey, cfg.Chain)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w: chain %q uses encryption %q", ErrFormatVersion, cfg.Chain, cfg.Encryption)
}

// checkConfig fails with ErrChainBusy if the chain's stored config is no
// longer cfg (removed by gc with the chain's last backup, or replaced by
// anyone who can write the bucket): what was written with cfg's keys would
// not restore. The cached config is dropped.
func (r *Repo) checkConfig(ctx context.Context, cfg *chainConfig) error {
	data, err := r.store.GetMax(ctx, configKey(cfg.Chain), maxConfigBytes)
	if err != nil && !errors.Is(err, store.ErrObjectNotFound) {
		return fmt.Errorf("re-read config of chain %q: %w", cfg.Chain, err)
	}
	if err != nil || !bytes.Equal(data, cfg.raw) {
		r.mu.Lock()
		delete(r.configs, cfg.Chain)
		r.mu.Unlock()
		return fmt.Errorf("%w: the config of chain %q was removed or replaced meanwhile; retry", ErrChainBusy, cfg.Chain)
	}
	return nil
}
