package s3chain

import (
	"context"
	"errors"
	"fmt"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// fetchBlock downloads the object of digest d (starting from key first,
// following getBlock to another object of d if that one was deleted) into
// objBuf, and decodes and checks it against d and its length want (bytes),
// into the buffer scratch returns (called only when the object is not a
// plain raw block, which is checked where it landed). It returns the verified bytes, the key read and the object's
// stored size in bytes. block names the block index in errors. Errors:
// ErrCorruptBlock (missing, too large, undecodable or wrong digest), store
// errors (store.ErrTransient ...), context errors. It is the one fetch of
// a restored block: Restore and BlockReader both use it.
func (r *Repo) fetchBlock(ctx context.Context, cfg *chainConfig, block int64, d digest, first string, want int64, objBuf []byte, scratch func() ([]byte, error)) ([]byte, string, int64, error) {
	key, obj, err := r.getBlock(ctx, cfg.Chain, d, first, func(k string) ([]byte, error) {
		return store.GetMaxInto(ctx, r.store, k, cfg.maxBlockObject(), objBuf)
	})
	if errors.Is(err, store.ErrObjectNotFound) || errors.Is(err, store.ErrObjectTooLarge) {
		return nil, key, 0, fmt.Errorf("%w: block %d (object %s) is missing: %w", ErrCorruptBlock, block, key, err)
	}
	if err != nil {
		return nil, key, 0, fmt.Errorf("fetch block %d (object %s): %w", block, key, err)
	}
	n := int64(len(obj))
	var buf []byte
	if !cfg.decodesInPlace(obj) {
		if buf, err = scratch(); err != nil {
			return nil, key, n, err
		}
	}
	data, err := cfg.checkBlock(obj, d, want, buf)
	if err != nil {
		return nil, key, n, fmt.Errorf("%w: block %d (object %s): %v", ErrCorruptBlock, block, key, err)
	}
	return data, key, n, nil
}

// BlockReader reads single blocks of one backup's volume image on demand,
// each fetched from the target and checked against its digest exactly as
// Restore checks it: the source of a lazily served image (pkg/lazy). It
// never writes to the target. It is safe for concurrent use.
type BlockReader struct {
	r      *Repo
	cfg    *chainConfig
	tip    *Manifest
	blocks []digest
}

// OpenBlocks resolves backup backupID ("latest" allowed) of chain as
// Restore does before it writes anything (the key, every manifest and hash
// link back to the full backup, the volume digest of the block map) and
// returns a reader of its blocks. No block object is read. Errors: those of
// Restore before it writes (ErrBackupNotFound, ErrChainBroken, ErrWrongKey,
// ErrInvalidManifest, ErrFormatVersion, store errors).
func (r *Repo) OpenBlocks(ctx context.Context, chain, backupID string) (*BlockReader, error) {
	cfg, path, blocks, err := r.resolve(ctx, chain, backupID)
	if err != nil {
		return nil, err
	}
	return &BlockReader{r: r, cfg: cfg, tip: path[0], blocks: blocks}, nil
}

// Manifest is the backup read.
func (b *BlockReader) Manifest() *Manifest { return b.tip }

// SizeBytes is the image's size in bytes.
func (b *BlockReader) SizeBytes() int64 { return b.tip.SizeBytes }

// BlockSize is the size of every block but the last, in bytes.
func (b *BlockReader) BlockSize() int64 { return b.tip.BlockSize }

// NumBlocks is the number of blocks of the image, zero blocks included.
func (b *BlockReader) NumBlocks() int64 { return int64(len(b.blocks)) }

// BlockLen is the length of block i in bytes (the last may be short).
func (b *BlockReader) BlockLen(i int64) int64 { return b.tip.blockLen(i) }

// IsZero reports whether block i is all zeros: it has no object, and
// reading it fetches nothing.
func (b *BlockReader) IsZero(i int64) bool { return b.blocks[i].isZero() }

// MaxObjectBytes bounds a block object in bytes: the size of the objBuf
// ReadBlock wants to avoid allocating.
func (b *BlockReader) MaxObjectBytes() int64 { return b.cfg.maxBlockObject() }

// ReadBlock fetches block i (0 ≤ i < NumBlocks, not a zero block) and
// returns its verified bytes, BlockLen(i) of them, decoded into buf or into
// objBuf (either may be nil or short: then allocated), and the object's
// stored size in bytes. Bytes that do not match the block's digest are
// never returned. Errors: ErrCorruptBlock (missing object, undecodable,
// wrong digest), store.ErrTransient (target unreachable after the store's
// retries), context errors.
func (b *BlockReader) ReadBlock(ctx context.Context, i int64, objBuf, buf []byte) ([]byte, int64, error) {
	if i < 0 || i >= int64(len(b.blocks)) || b.blocks[i].isZero() {
		return nil, 0, fmt.Errorf("read block %d of %d: not a data block", i, len(b.blocks))
	}
	d := b.blocks[i]
	if int64(cap(objBuf)) < b.cfg.maxBlockObject() {
		objBuf = make([]byte, b.cfg.maxBlockObject())
	}
	data, _, n, err := b.r.fetchBlock(ctx, b.cfg, i, d, blockKey(b.cfg.Chain, d.String()), b.tip.blockLen(i), objBuf[:cap(objBuf)],
		func() ([]byte, error) { return buf, nil })
	return data, n, err
}
