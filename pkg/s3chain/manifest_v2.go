package s3chain

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// manifestV2 is the stored form of a version-2 or -3 manifest (FORMAT.md
// §4.1; the two differ only in formatVersion):
// canonical JSON of these fields in this order. The block list is packed
// (v2EntryLen bytes an entry: block index as little-endian uint32, then the
// 32-byte digest), so a large manifest decodes in one base64 pass.
type manifestV2 struct {
	FormatVersion  int       `json:"formatVersion"`
	Chain          string    `json:"chain"`
	ID             string    `json:"id"`
	ParentID       string    `json:"parentId"`
	CreatedAt      time.Time `json:"createdAt"`
	SizeBytes      int64     `json:"sizeBytes"`
	BlockSize      int64     `json:"blockSize"`
	VolumeMode     string    `json:"volumeMode"`
	FSType         string    `json:"fsType"`
	SourceVolume   string    `json:"sourceVolume"`
	Node           string    `json:"node"`
	GroupID        string    `json:"groupId"`
	Member         string    `json:"member"`
	Blocks         []byte    `json:"blocks"`
	ImageBlocks    int       `json:"imageBlocks"`
	ChangedBlocks  int       `json:"changedBlocks"`
	ZeroedBlocks   int       `json:"zeroedBlocks"`
	ChangedBytes   int64     `json:"changedBytes"`
	StoredBytes    int64     `json:"storedBytes"`
	AllocatedBytes int64     `json:"allocatedBytes"`
	VolumeDigest   string    `json:"volumeDigest"`
	MAC            string    `json:"mac"`
}

const v2EntryLen = 4 + 32

// encodeV2 encodes m with its own FormatVersion (2 or 3).
func encodeV2(m *Manifest) []byte {
	w := manifestV2{FormatVersion: m.FormatVersion, Chain: m.Chain, ID: m.ID, ParentID: m.ParentID, CreatedAt: m.CreatedAt,
		SizeBytes: m.SizeBytes, BlockSize: m.BlockSize, VolumeMode: m.VolumeMode, FSType: m.FSType,
		SourceVolume: m.SourceVolume, Node: m.Node, GroupID: m.GroupID, Member: m.Member,
		Blocks: packBlocks(m.Blocks), ImageBlocks: len(m.Blocks), ChangedBlocks: m.DataBlocks,
		ZeroedBlocks: m.ZeroBlocks, ChangedBytes: m.DataBytes, StoredBytes: m.StoredBytes,
		AllocatedBytes: m.AllocatedBytes, VolumeDigest: m.VolumeDigest, MAC: m.MAC}
	b, err := json.Marshal(&w)
	if err != nil { // only plain types: cannot happen
		panic(err)
	}
	return b
}

// packBlocks packs a sorted block list. An entry without a digest (a
// version-1 zero entry) cannot be packed; callers never pass one.
func packBlocks(refs []BlockRef) []byte {
	out := make([]byte, 0, len(refs)*v2EntryLen)
	for _, b := range refs {
		out = binary.LittleEndian.AppendUint32(out, uint32(b.Index))
		d, _ := hex.DecodeString(b.Digest)
		out = append(out, d...)
	}
	return out
}

func decodeV2(data []byte) (*Manifest, error) {
	var w manifestV2
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	m := &Manifest{FormatVersion: w.FormatVersion, Chain: w.Chain, ID: w.ID, ParentID: w.ParentID, CreatedAt: w.CreatedAt,
		SizeBytes: w.SizeBytes, BlockSize: w.BlockSize, VolumeMode: w.VolumeMode, FSType: w.FSType,
		SourceVolume: w.SourceVolume, Node: w.Node, GroupID: w.GroupID, Member: w.Member,
		DataBlocks: w.ChangedBlocks, ZeroBlocks: w.ZeroedBlocks, DataBytes: w.ChangedBytes,
		StoredBytes: w.StoredBytes, AllocatedBytes: w.AllocatedBytes, VolumeDigest: w.VolumeDigest, MAC: w.MAC}
	bad := m.badManifest()
	if err := m.validateCommon(bad); err != nil {
		return nil, err
	}
	if len(w.Blocks)%v2EntryLen != 0 || len(w.Blocks)/v2EntryLen != w.ImageBlocks {
		return nil, bad("block list of %d bytes does not hold %d entries", len(w.Blocks), w.ImageBlocks)
	}
	if err := m.unpackBlocks(w.Blocks, bad); err != nil {
		return nil, err
	}
	if w.ChangedBlocks < 0 || w.ZeroedBlocks < 0 || w.ChangedBlocks > len(m.Blocks) || w.ChangedBytes < 0 || w.ChangedBytes > m.AllocatedBytes {
		return nil, bad("changed-block counts are out of range")
	}
	if !bytes.Equal(encodeV2(m), data) {
		return nil, fmt.Errorf("%w: backup %q is not canonically encoded", ErrInvalidManifest, m.ID)
	}
	return m, nil
}

// unpackBlocks fills m.Blocks from the packed list and checks it: indices
// sorted, unique and inside the volume, and AllocatedBytes their length.
func (m *Manifest) unpackBlocks(packed []byte, bad func(string, ...any) error) error {
	n := m.NumBlocks()
	m.Blocks = make([]BlockRef, 0, len(packed)/v2EntryLen)
	var alloc int64
	for off := 0; off < len(packed); off += v2EntryLen {
		i := int64(binary.LittleEndian.Uint32(packed[off:]))
		if i >= n {
			return bad("block %d outside the volume's %d blocks", i, n)
		}
		if k := len(m.Blocks); k > 0 && i <= m.Blocks[k-1].Index {
			return bad("block list not sorted and unique at block %d", i)
		}
		d := digest(packed[off+4 : off+v2EntryLen])
		if d.isZero() {
			return bad("block %d has the zero digest", i)
		}
		m.Blocks = append(m.Blocks, BlockRef{Index: i, Digest: d.String()})
		alloc += m.blockLen(i)
	}
	if alloc != m.AllocatedBytes {
		return bad("allocatedBytes %d is not the %d bytes its blocks hold", m.AllocatedBytes, alloc)
	}
	return nil
}
