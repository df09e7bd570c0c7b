package s3chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// FormatVersion is the version of the chain format (docs/FORMAT.md) this
// package writes: configs of new chains (block digest BLAKE3) and every
// manifest, in chains of any version (a version-3 manifest is one written
// under protocol 3; its layout is version 2's). It reads versions 1, 2 and
// 3 and rejects any other with ErrFormatVersion rather than guess at its
// meaning.
const FormatVersion = 3

// Bounds on what a reader accepts from a store, so that a corrupt or
// hostile bucket cannot exhaust memory (FORMAT.md §4.3): a manifest object
// is at most its header plus MaxBlocks packed entries (version 2: 36 bytes
// each, base64) or maxV1Entries JSON entries (version 1: under 96 bytes
// each); either decodes in well under 256 MiB of memory.
const (
	maxManifestHeader = 64 << 10
	maxV1Entries      = 1 << 18
	maxManifestBytes  = maxManifestHeader + (MaxBlocks*v2EntryLen+2)/3*4
	maxV1Bytes        = maxManifestHeader + maxV1Entries*96
)

// Manifest describes one backup of a chain. Version 2 and 3 manifests are
// self-contained: Blocks lists every non-zero block of the volume image, so
// a backup restores from its own manifest whatever happens to its parent.
// Version 1 manifests (read only) list the blocks changed since the parent
// and are hash-linked to it. Encode gives the stored bytes of either.
type Manifest struct {
	FormatVersion int    `json:"formatVersion"`
	Chain         string `json:"chain"`
	ID            string `json:"id"`
	// ParentID is "" for a full backup, else the backup this one was
	// compared with (version 2: for information only; it may be deleted).
	ParentID string `json:"parentId"`
	// ParentDigest is the parent manifest's Digest() (version 1 only).
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
	// Owner is the writer's BackupOptions.Owner (version 3; "" if none).
	Owner string `json:"owner,omitempty"`
	// Blocks, sorted by index: version 2, every non-zero block of the
	// volume image; version 1, every non-zero block (full backup) or every
	// block changed since the parent (a zero entry: it became all-zero).
	Blocks []BlockRef `json:"blocks"`
	// DataBlocks and ZeroBlocks count the blocks that changed since the
	// parent (all non-zero blocks for a full backup), became non-zero or
	// zero; DataBytes is the raw size of the changed non-zero blocks.
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
	// MAC authenticates the manifest (FORMAT.md §4.2).
	MAC string `json:"mac"`
}

// BlockRef is one entry of a manifest's block list.
type BlockRef struct {
	// Index is the block number: the block covers bytes
	// [Index*BlockSize, min((Index+1)*BlockSize, SizeBytes)).
	Index int64 `json:"i"`
	// Digest is the keyed digest of the block's bytes (the chain config's
	// algorithm: HMAC-SHA256 or BLAKE3) in lower-case hex,
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

// Full reports whether the backup was made without a parent.
func (m *Manifest) Full() bool { return m.ParentID == "" }

// SelfContained reports whether the manifest alone gives the volume image
// (every version-2 manifest, and a version-1 full backup).
func (m *Manifest) SelfContained() bool { return m.FormatVersion >= 2 || m.Full() }

// Encode returns the canonical bytes of the manifest in its version's
// encoding: what is stored and hashed by Digest.
func (m *Manifest) Encode() []byte {
	if m.FormatVersion == 1 {
		return encodeV1(m)
	}
	return encodeV2(m)
}

// Digest returns the lower-case hex SHA-256 of Encode() (a version-1
// child records it as ParentDigest).
func (m *Manifest) Digest() string {
	sum := sha256.Sum256(m.Encode())
	return hex.EncodeToString(sum[:])
}

// DecodeManifest parses a stored manifest of version 1, 2 or 3 and checks its
// structure: size bound, format version (ErrFormatVersion), canonical
// encoding, names, sizes, and a sorted block list within the volume
// (ErrInvalidManifest). It does not check the MAC, which needs the chain
// (see Repo.Manifest).
func DecodeManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%w: %d bytes is more than the %d a manifest may have", ErrInvalidManifest, len(data), maxManifestBytes)
	}
	version, err := probeVersion(data)
	if err != nil {
		return nil, err
	}
	switch version {
	case 1:
		if len(data) > maxV1Bytes {
			return nil, fmt.Errorf("%w: version-1 manifest of %d bytes is more than %d", ErrInvalidManifest, len(data), maxV1Bytes)
		}
		return decodeV1(data)
	case 2, 3: // one layout (FORMAT.md §4.1)
		return decodeV2(data)
	}
	return nil, fmt.Errorf("%w: manifest has version %d, this reader knows 1 to %d", ErrFormatVersion, version, FormatVersion)
}

// probeVersion returns a manifest's formatVersion. Every canonical
// manifest starts with it, read here without parsing the rest; anything
// else is parsed in full (and then fails the version's canonical check).
func probeVersion(data []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(data, []byte(`{"formatVersion":`)); ok {
		if digits, _, ok := bytes.Cut(rest[:min(len(rest), 8)], []byte(",")); ok {
			if v, err := strconv.Atoi(string(digits)); err == nil && v > 0 {
				return v, nil
			}
		}
	}
	var probe struct {
		FormatVersion int `json:"formatVersion"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	return probe.FormatVersion, nil
}
