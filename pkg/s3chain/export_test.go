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
		Digest: digestAlgo, Compression: "zstd", Encryption: encNone, DigestKey: key}
	if r.aead != nil {
		cfg.Encryption = encAESGCM
		cfg.DigestKey = seal(r.aead, key, []byte(digestKeyAAD+chain))
	}
	data, _ := json.Marshal(cfg)
	return r.store.Put(ctx, configKey(chain), data)
}

// DowngradeChainForTest rewrites every manifest of a chain whose config is
// version 1 as the hash-linked delta manifest version 1 wrote: each lists
// the blocks that differ from its parent's image (zero entries for blocks
// that became zero), links to the parent's digest and carries a MAC under
// the digest key.
func DowngradeChainForTest(ctx context.Context, r *Repo, chain string) error {
	cfg, err := r.chain(ctx, chain, false, 0)
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
