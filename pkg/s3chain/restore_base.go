package s3chain

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/chainvol/chainvol/internal/durable"
)

// Image is the block list of one backup's volume image: what a node keeps
// beside a local snapshot of that backup so that a later restore of any
// backup of the chain can start from a reflink of the snapshot and fetch
// only the blocks whose digest differs (RestoreOptions.Base), even after
// the backup itself was deleted from the backup target. Blocks lists every
// non-zero block (index and digest, as a version-2 manifest does); the
// rest are zero. VolumeDigest (FORMAT.md §5) makes a damaged record
// detectable.
type Image struct {
	Chain        string     `json:"chain"`
	BackupID     string     `json:"backupId"`
	SizeBytes    int64      `json:"sizeBytes"`
	BlockSize    int64      `json:"blockSize"`
	VolumeDigest string     `json:"volumeDigest"`
	Blocks       []BlockRef `json:"blocks"`
}

// ImageOf returns the image of a self-contained manifest (every version-2
// manifest) without any request; nil for a version-1 incremental, whose
// image needs its chain (Repo.Image).
func ImageOf(m *Manifest) *Image {
	if !m.SelfContained() {
		return nil
	}
	im := &Image{Chain: m.Chain, BackupID: m.ID, SizeBytes: m.SizeBytes, BlockSize: m.BlockSize, VolumeDigest: m.VolumeDigest}
	for _, b := range m.Blocks {
		if b.Digest != "" {
			im.Blocks = append(im.Blocks, b)
		}
	}
	return im
}

// Image returns the image of backup backupID ("latest" allowed) of chain,
// checked as a restore checks it (manifest MACs, volume digest).
// Errors: those of Restore before it writes.
func (r *Repo) Image(ctx context.Context, chain, backupID string) (*Image, error) {
	_, path, blocks, err := r.resolve(ctx, chain, backupID)
	if err != nil {
		return nil, err
	}
	tip := path[0]
	im := &Image{Chain: chain, BackupID: tip.ID, SizeBytes: tip.SizeBytes, BlockSize: tip.BlockSize, VolumeDigest: tip.VolumeDigest}
	for i, d := range blocks {
		if !d.isZero() {
			im.Blocks = append(im.Blocks, BlockRef{Index: int64(i), Digest: d.String()})
		}
	}
	return im, nil
}

// digests returns the digest of every block of the image, zero for zero
// blocks, after checking the list against VolumeDigest. Errors:
// ErrInvalidManifest.
func (im *Image) digests() ([]digest, error) {
	if im.BlockSize <= 0 || im.SizeBytes < 0 {
		return nil, fmt.Errorf("%w: image of %q has block size %d and size %d", ErrInvalidManifest, im.BackupID, im.BlockSize, im.SizeBytes)
	}
	n := (im.SizeBytes + im.BlockSize - 1) / im.BlockSize
	out := make([]digest, n)
	for _, b := range im.Blocks {
		if b.Index < 0 || b.Index >= n {
			return nil, fmt.Errorf("%w: image of %q lists block %d of %d", ErrInvalidManifest, im.BackupID, b.Index, n)
		}
		d, err := parseDigest(b.Digest)
		if err != nil {
			return nil, err
		}
		out[b.Index] = d
	}
	if got := volumeDigest(im.SizeBytes, im.BlockSize, out); got != im.VolumeDigest {
		return nil, fmt.Errorf("%w: image of %q does not match its volume digest", ErrInvalidManifest, im.BackupID)
	}
	return out, nil
}

// SharedBytes is how many bytes of im a restore starting from base need
// not fetch: the non-zero blocks at the same index with the same digest
// (0 when the chains or block sizes differ).
func (im *Image) SharedBytes(base *Image) int64 {
	if base == nil || base.Chain != im.Chain || base.BlockSize != im.BlockSize {
		return 0
	}
	have := make(map[int64]string, len(base.Blocks))
	for _, b := range base.Blocks {
		have[b.Index] = b.Digest
	}
	var n int64
	for _, b := range im.Blocks {
		if have[b.Index] == b.Digest {
			n += min(im.BlockSize, im.SizeBytes-b.Index*im.BlockSize)
		}
	}
	return n
}

// WriteFile stores the image at path durably (durable.WriteFile, mode
// 0600), so a crash leaves the old record or the new one. The directory
// must exist. Errors: those of the filesystem.
func (im *Image) WriteFile(path string) error {
	data, err := json.Marshal(im)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write image record %s: %w", path, err)
	}
	return nil
}

// ReadImage reads an image written by WriteFile and checks it against its
// volume digest. Errors: the read error (os.ErrNotExist ...),
// ErrInvalidManifest.
func ReadImage(path string) (*Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	im := &Image{}
	if err := json.Unmarshal(data, im); err != nil {
		return nil, fmt.Errorf("%w: image record %s: %v", ErrInvalidManifest, path, err)
	}
	if _, err := im.digests(); err != nil {
		return nil, fmt.Errorf("image record %s: %w", path, err)
	}
	return im, nil
}

// baseDigests returns the digests of o.Base when it can seed a restore of
// tip: same chain and block size; nil otherwise (the restore then writes
// every block, which is correct whatever the destination holds).
func baseDigests(o *RestoreOptions, tip *Manifest) ([]digest, error) {
	b := o.Base
	if b == nil || b.Chain != o.Chain || b.BlockSize != tip.BlockSize {
		return nil, nil
	}
	return b.digests()
}

// fromBase reports whether block i of the image is already on the
// destination because the destination started as a copy of the base image.
func (j *restoreJob) fromBase(i int) bool {
	return i < len(j.base) && !j.base[i].isZero() && j.base[i] == j.blocks[i]
}
