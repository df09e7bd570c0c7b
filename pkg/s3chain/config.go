package s3chain

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// chainConfig is the chain's config object, chains/<chain>.json (FORMAT.md
// §3): the fixed block size and the per-chain digest key that names blocks.
type chainConfig struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	BlockSize     int64     `json:"blockSize"`
	CreatedAt     time.Time `json:"createdAt"`
	Digest        string    `json:"digest"`      // always digestAlgo
	Compression   string    `json:"compression"` // always "zstd"
	Encryption    string    `json:"encryption"`  // "none" or "aes-256-gcm"
	// DigestKey is the 32-byte key of block digests: plain when the chain
	// is not encrypted, else sealed (nonce || AES-GCM) with the repo key.
	DigestKey []byte `json:"digestKey"`

	key []byte // the opened digest key
}

const (
	digestAlgo    = "hmac-sha256"
	encNone       = "none"
	encAESGCM     = "aes-256-gcm"
	digestKeyAAD  = "chainvol digest key for chain "
	digestKeyLen  = 32
	maxConfigSize = 1 << 20
)

// chain returns the opened config of chain. When create is set and the
// chain has none, it makes one with blockSize (0 = DefaultBlockSize).
// Errors: ErrBackupNotFound (no such chain, create unset), ErrWrongKey,
// ErrFormatVersion, ErrInvalidOptions (blockSize differs from the chain's).
func (r *Repo) chain(ctx context.Context, chain string, create bool, blockSize int64) (*chainConfig, error) {
	if err := ValidChainName(chain); err != nil {
		return nil, err
	}
	r.mu.Lock()
	cfg := r.configs[chain]
	r.mu.Unlock()
	if cfg == nil {
		data, err := r.store.Get(ctx, configKey(chain))
		switch {
		case errors.Is(err, ErrObjectNotFound) && create:
			cfg, err = r.createChain(ctx, chain, blockSize)
		case errors.Is(err, ErrObjectNotFound):
			return nil, fmt.Errorf("%w: chain %q has no backups", ErrBackupNotFound, chain)
		case err == nil:
			cfg, err = r.openConfig(chain, data)
		}
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.configs[chain] = cfg
		r.mu.Unlock()
	}
	if blockSize != 0 && blockSize != cfg.BlockSize {
		return nil, fmt.Errorf("%w: block size %d bytes differs from chain %q's %d", ErrInvalidOptions, blockSize, chain, cfg.BlockSize)
	}
	return cfg, nil
}

func (r *Repo) createChain(ctx context.Context, chain string, blockSize int64) (*chainConfig, error) {
	if blockSize == 0 {
		blockSize = DefaultBlockSize
	}
	if err := checkBlockSize(blockSize); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	cfg := &chainConfig{FormatVersion: FormatVersion, Chain: chain, BlockSize: blockSize,
		CreatedAt: time.Now().UTC(), Digest: digestAlgo, Compression: "zstd", Encryption: encNone,
		key: make([]byte, digestKeyLen)}
	if _, err := rand.Read(cfg.key); err != nil {
		return nil, err
	}
	cfg.DigestKey = cfg.key
	if r.aead != nil {
		cfg.Encryption = encAESGCM
		cfg.DigestKey = r.seal(cfg.key, []byte(digestKeyAAD+chain))
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.store.Put(ctx, configKey(chain), data); err != nil {
		return nil, fmt.Errorf("write config of chain %q: %w", chain, err)
	}
	return cfg, nil
}

// openConfig decodes a config object and opens its digest key.
func (r *Repo) openConfig(chain string, data []byte) (*chainConfig, error) {
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("%w: config of chain %q is %d bytes", ErrInvalidManifest, chain, len(data))
	}
	cfg := &chainConfig{}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("%w: config of chain %q: %v", ErrInvalidManifest, chain, err)
	}
	if cfg.FormatVersion != FormatVersion || cfg.Digest != digestAlgo || cfg.Compression != "zstd" {
		return nil, fmt.Errorf("%w: chain %q config has version %d (%s, %s), this reader knows %d", ErrFormatVersion, chain, cfg.FormatVersion, cfg.Digest, cfg.Compression, FormatVersion)
	}
	if cfg.Chain != chain || checkBlockSize(cfg.BlockSize) != nil {
		return nil, fmt.Errorf("%w: config of chain %q names chain %q, block size %d", ErrInvalidManifest, chain, cfg.Chain, cfg.BlockSize)
	}
	switch {
	case cfg.Encryption == encNone && r.aead == nil:
		cfg.key = cfg.DigestKey
	case cfg.Encryption == encNone:
		return nil, fmt.Errorf("%w: chain %q is not encrypted but a key was given", ErrWrongKey, chain)
	case cfg.Encryption == encAESGCM && r.aead == nil:
		return nil, fmt.Errorf("%w: chain %q is encrypted and no key was given", ErrWrongKey, chain)
	case cfg.Encryption == encAESGCM:
		key, err := r.open(slices.Clone(cfg.DigestKey), []byte(digestKeyAAD+chain))
		if err != nil {
			return nil, fmt.Errorf("%w: the key does not open chain %q", ErrWrongKey, chain)
		}
		cfg.key = key
	default:
		return nil, fmt.Errorf("%w: chain %q uses encryption %q", ErrFormatVersion, chain, cfg.Encryption)
	}
	if len(cfg.key) != digestKeyLen {
		return nil, fmt.Errorf("%w: chain %q digest key is %d bytes", ErrInvalidManifest, chain, len(cfg.key))
	}
	return cfg, nil
}
