package s3chain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// maxChainLen bounds how many manifests a restore walks; it only guards
// against a cycle planted in a corrupted store.
const maxChainLen = 100000

// resolvePath returns the manifests tip depends on, tip first and a
// self-contained one last: a version-2 tip alone; a version-1 tip followed
// by its version-1 parents down to the full backup, or to a parent already
// rewritten as version 2 (FORMAT.md §7, delete). Each version-1 parent must
// exist (ErrChainBroken naming the missing id) and hash to the child's
// ParentDigest (ErrChainBroken naming both); a version-2 parent stands on
// its own MAC, and the tip's volume digest is checked by resolve.
func (r *Repo) resolvePath(ctx context.Context, cfg *chainConfig, tip *Manifest) ([]*Manifest, error) {
	path := []*Manifest{tip}
	for m := tip; !m.SelfContained(); {
		if len(path) > maxChainLen {
			return nil, fmt.Errorf("%w: chain %q is longer than %d backups (a cycle?)", ErrChainBroken, cfg.Chain, maxChainLen)
		}
		p, err := r.loadManifest(ctx, cfg, m.ParentID)
		if errors.Is(err, ErrBackupNotFound) {
			return nil, fmt.Errorf("%w: manifest of backup %q (parent of %q) is missing", ErrChainBroken, m.ParentID, m.ID)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: parent of %q: %w", ErrChainBroken, m.ID, err)
		}
		if got := p.Digest(); p.FormatVersion == 1 && got != m.ParentDigest {
			return nil, fmt.Errorf("%w: hash link from backup %q to parent %q does not match (parent digest %s, recorded %s)", ErrChainBroken, m.ID, p.ID, got, m.ParentDigest)
		}
		path = append(path, p)
		m = p
	}
	return path, nil
}

// blockMap returns the digest of every block of the volume image of
// path[0], given its path from resolvePath (for a self-contained tip, just
// its own list): the newest manifest listing a block wins, and a block beyond the size of any backup between the tip and
// the lister stays zero (a shrink truncated it). Each index is decided once
// however long the chain.
func blockMap(path []*Manifest) ([]digest, error) {
	n := path[0].NumBlocks()
	out := make([]digest, n)
	set := make([]bool, n)
	limit := n
	for _, m := range path {
		limit = min(limit, m.NumBlocks())
		for _, b := range m.Blocks {
			if b.Index >= limit || set[b.Index] {
				continue
			}
			d, err := parseDigest(b.Digest)
			if err != nil {
				return nil, fmt.Errorf("backup %q block %d: %w", m.ID, b.Index, err)
			}
			out[b.Index], set[b.Index] = d, true
		}
	}
	return out, nil
}

// volumeDigest is the digest of a whole volume image (FORMAT.md §5):
// SHA-256 over a header (format tag, size and block size in bytes, little
// endian) and the 32-byte digest of every block in order, 32 zero bytes for
// an all-zero block. Block digests are keyed, so it is too.
func volumeDigest(size, blockSize int64, blocks []digest) string {
	h := sha256.New()
	h.Write([]byte("chainvol-volume-v1\x00"))
	var hdr [16]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(size))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(blockSize))
	h.Write(hdr[:])
	for i := range blocks {
		h.Write(blocks[i][:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// allocatedBytes sums the lengths of the non-zero blocks of a volume image.
func allocatedBytes(size, blockSize int64, blocks []digest) int64 {
	var n int64
	for i, d := range blocks {
		if !d.isZero() {
			n += min(blockSize, size-int64(i)*blockSize)
		}
	}
	return n
}

// resolve loads backupID ("latest" allowed) of chain, verifies its whole
// path, and returns the manifest, its path and its block map, after checking
// the map against the manifest's VolumeDigest, all before any byte is
// written anywhere.
func (r *Repo) resolve(ctx context.Context, chain, backupID string) (*chainConfig, []*Manifest, []digest, error) {
	return r.resolveWith(ctx, chain, backupID, r.Manifest)
}

// resolveWith is resolve with the tip looked up by lookup (Repo.Manifest,
// or unreadyManifest for a commit to finish).
func (r *Repo) resolveWith(ctx context.Context, chain, backupID string, lookup func(context.Context, string, string) (*Manifest, error)) (*chainConfig, []*Manifest, []digest, error) {
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	tip, err := lookup(ctx, chain, backupID)
	if err != nil {
		return nil, nil, nil, err
	}
	path, err := r.resolvePath(ctx, cfg, tip)
	if err != nil {
		return nil, nil, nil, err
	}
	blocks, err := blockMap(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if got := volumeDigest(tip.SizeBytes, tip.BlockSize, blocks); got != tip.VolumeDigest {
		return nil, nil, nil, fmt.Errorf("%w: the blocks of backup %q's chain do not add up to its volume digest (got %s, recorded %s)", ErrChainBroken, tip.ID, got, tip.VolumeDigest)
	}
	return cfg, path, blocks, nil
}
