package s3chain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// SyntheticBackup describes a backup for WriteSyntheticBackupForTest.
type SyntheticBackup struct {
	Chain, ID, Parent string
	CreatedAt         time.Time
	SizeBytes         int64
	// Blocks are the indices of the image's data blocks, ascending; block
	// i's digest is SyntheticDigest(Seed, i), so backups of one seed share
	// their blocks.
	Blocks []int64
	Seed   uint64
	// Objects also stores a 1-byte object for each block (what gc lists).
	Objects bool
}

// SyntheticDigest is the made-up digest of block i under seed.
func SyntheticDigest(seed uint64, i int64) [32]byte {
	var in [16]byte
	binary.LittleEndian.PutUint64(in[:8], seed)
	binary.LittleEndian.PutUint64(in[8:], uint64(i))
	return sha256.Sum256(in[:])
}

// WriteSyntheticBackupForTest stores the signed manifest of a made-up
// backup (no volume behind it) in a chain of block size bs, creating the
// chain if needed: the scale tests build chains of any size this way in
// the in-memory store, as fast as the store takes objects. Its volume
// digest is right, so the backup reads, verifies and resolves like a real
// one (restoring it would find the objects' bytes wrong).
func WriteSyntheticBackupForTest(ctx context.Context, r *Repo, b SyntheticBackup, bs int64) (*Manifest, error) {
	cfg, err := r.chain(ctx, b.Chain, &newChain{blockSize: bs})
	if err != nil {
		return nil, err
	}
	m := &Manifest{FormatVersion: FormatVersion, Chain: b.Chain, ID: b.ID, ParentID: b.Parent, CreatedAt: b.CreatedAt.UTC(),
		SizeBytes: b.SizeBytes, BlockSize: bs, VolumeMode: "block", Blocks: make([]BlockRef, 0, len(b.Blocks))}
	img := make([]digest, m.NumBlocks())
	for _, i := range b.Blocks {
		d := digest(SyntheticDigest(b.Seed, i))
		img[i] = d
		m.Blocks = append(m.Blocks, BlockRef{Index: i, Digest: d.String()})
		m.AllocatedBytes += m.blockLen(i)
		if b.Objects {
			if err := r.store.Put(ctx, blockKey(b.Chain, d.String()), []byte{kindRaw}); err != nil {
				return nil, err
			}
		}
	}
	m.DataBlocks, m.DataBytes = len(m.Blocks), m.AllocatedBytes
	m.VolumeDigest = volumeDigest(m.SizeBytes, bs, img)
	cfg.sign(m)
	return m, r.store.Put(ctx, manifestKey(b.Chain, b.ID), m.Encode())
}
