package s3chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// FormatVersion is the version of the chain format (docs/FORMAT.md) this
// package writes. Readers reject manifests and configs of any other version
// with ErrFormatVersion rather than guess at their meaning.
const FormatVersion = 1

// maxManifestBytes bounds a manifest object in bytes (a 64 TiB volume of
// 4 MiB blocks lists 16 Mi blocks of about 80 bytes each).
const maxManifestBytes = 2 << 30

// Manifest describes one backup of a chain. It is stored as canonical JSON
// (the exact bytes of Encode) under manifests/<chain>/<id>.json.
type Manifest struct {
	FormatVersion int    `json:"formatVersion"`
	Chain         string `json:"chain"`
	ID            string `json:"id"`
	// ParentID is "" for a full backup, else the backup this one changes.
	ParentID string `json:"parentId"`
	// ParentDigest is the parent manifest's Digest(), "" for a full backup.
	ParentDigest string    `json:"parentDigest"`
	CreatedAt    time.Time `json:"createdAt"` // UTC
	SizeBytes    int64     `json:"sizeBytes"` // volume size in bytes
	BlockSize    int64     `json:"blockSize"` // bytes, fixed per chain
	VolumeMode   string    `json:"volumeMode"`
	// FSType is the filesystem found on the volume; "" means unknown.
	FSType       string `json:"fsType"`
	SourceVolume string `json:"sourceVolume"`
	Node         string `json:"node"`
	GroupID      string `json:"groupId"`
	Member       string `json:"member"`
	// Blocks lists, sorted by index, every non-zero block (full backup) or
	// every block changed since the parent (incremental; a zero entry means
	// the block became all-zero).
	Blocks []BlockRef `json:"blocks"`
	// DataBlocks and ZeroBlocks count the listed entries; DataBytes is the
	// raw size of the listed non-zero blocks.
	DataBlocks int   `json:"dataBlocks"`
	ZeroBlocks int   `json:"zeroBlocks"`
	DataBytes  int64 `json:"dataBytes"`
	// StoredBytes is the size of the block objects this backup uploaded.
	StoredBytes int64 `json:"storedBytes"`
	// AllocatedBytes is the size of all non-zero blocks of the volume image.
	AllocatedBytes int64 `json:"allocatedBytes"`
	// VolumeDigest is the hash over the digests of every block of the volume
	// image (FORMAT.md §5), checked by every restore.
	VolumeDigest string `json:"volumeDigest"`
	// MAC is HMAC-SHA256 of the manifest with MAC "", keyed by the chain's
	// digest key: it detects corruption, and forgery when encrypted.
	MAC string `json:"mac"`
}

// BlockRef is one entry of a manifest's block list.
type BlockRef struct {
	// Index is the block number: the block covers bytes
	// [Index*BlockSize, min((Index+1)*BlockSize, SizeBytes)).
	Index int64 `json:"i"`
	// Digest is the keyed HMAC-SHA256 of the block's bytes in lower-case hex,
	// or "" for an all-zero block (which has no object).
	Digest string `json:"d,omitempty"`
}

// NumBlocks returns the number of blocks of the volume, ceil(SizeBytes /
// BlockSize).
func (m *Manifest) NumBlocks() int64 {
	if m.BlockSize <= 0 {
		return 0
	}
	return (m.SizeBytes + m.BlockSize - 1) / m.BlockSize
}

// blockLen returns the length in bytes of block i (the last may be short).
func (m *Manifest) blockLen(i int64) int64 {
	return min(m.BlockSize, m.SizeBytes-i*m.BlockSize)
}

// Full reports whether the backup has no parent.
func (m *Manifest) Full() bool { return m.ParentID == "" }

// Encode returns the canonical JSON of the manifest: the bytes stored and
// hashed by Digest.
func (m *Manifest) Encode() []byte {
	c := *m
	if c.Blocks == nil {
		c.Blocks = []BlockRef{}
	}
	b, err := json.Marshal(&c)
	if err != nil { // only plain types: cannot happen
		panic(err)
	}
	return b
}

// Digest returns the lower-case hex SHA-256 of Encode(): what a child's
// ParentDigest records, making the chain a hash chain.
func (m *Manifest) Digest() string {
	sum := sha256.Sum256(m.Encode())
	return hex.EncodeToString(sum[:])
}

// DecodeManifest parses a stored manifest and checks its structure: format
// version (ErrFormatVersion), canonical encoding, names, sizes, and a sorted
// block list within the volume (ErrInvalidManifest). It does not check the
// MAC or hash links, which need the chain (see Repo.Manifest).
func DecodeManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalidManifest, len(data))
	}
	var probe struct {
		FormatVersion int `json:"formatVersion"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if probe.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w: manifest has version %d, this reader knows %d", ErrFormatVersion, probe.FormatVersion, FormatVersion)
	}
	m := &Manifest{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	if !bytes.Equal(m.Encode(), data) {
		return nil, fmt.Errorf("%w: backup %q is not canonically encoded", ErrInvalidManifest, m.ID)
	}
	return m, nil
}
