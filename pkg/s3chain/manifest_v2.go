package s3chain

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// manifestV2 is the stored form of a version-2 or -3 manifest (FORMAT.md
// §4.1; the two differ only in formatVersion):
// canonical JSON of these fields in this order. The block list is packed
// (v2EntryLen bytes an entry: block index as little-endian uint32, then the
// 32-byte digest), so a large manifest decodes in one base64 pass. B is the
// block list's Go type: []byte to encode, b64Blocks to decode.
type manifestV2[B any] struct {
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
	Owner          string    `json:"owner,omitempty"` // version 3 only
	Blocks         B         `json:"blocks"`
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

// b64Entry is the length of one packed entry in base64: 36 bytes are 48
// characters, so a list of whole entries has no padding.
const b64Entry = v2EntryLen / 3 * 4

// v2Header is the stored form of m with packed as its block list.
func v2Header(m *Manifest, packed []byte) manifestV2[[]byte] {
	return manifestV2[[]byte]{FormatVersion: m.FormatVersion, Chain: m.Chain, ID: m.ID, ParentID: m.ParentID, CreatedAt: m.CreatedAt,
		SizeBytes: m.SizeBytes, BlockSize: m.BlockSize, VolumeMode: m.VolumeMode, FSType: m.FSType,
		SourceVolume: m.SourceVolume, Node: m.Node, GroupID: m.GroupID, Member: m.Member, Owner: m.Owner,
		Blocks: packed, ImageBlocks: len(m.Blocks), ChangedBlocks: m.DataBlocks,
		ZeroedBlocks: m.ZeroBlocks, ChangedBytes: m.DataBytes, StoredBytes: m.StoredBytes,
		AllocatedBytes: m.AllocatedBytes, VolumeDigest: m.VolumeDigest, MAC: m.MAC}
}

// encodeV2 encodes m with its own FormatVersion (2 or 3).
func encodeV2(m *Manifest) []byte {
	w := v2Header(m, packBlocks(m.Blocks))
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
		var d digest
		_, _ = hex.Decode(d[:], []byte(b.Digest))
		out = append(out, d[:]...)
	}
	return out
}

// b64Blocks is the packed block list as it stands in a stored manifest:
// the base64 text between its quotes, a slice of the stored bytes
// (json.Unmarshal hands an Unmarshaler a slice of its input), decoded
// entry by entry by unpackBlocks instead of into another copy of the list.
// It is only used while those bytes are (decodeV2).
type b64Blocks []byte

func (b *b64Blocks) UnmarshalJSON(v []byte) error {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return fmt.Errorf("blocks is not a string")
	}
	*b = v[1 : len(v)-1]
	return nil
}

// decodeV2 decodes and checks a version-2 or -3 manifest. Measured at 1 Mi
// blocks (BenchmarkScale/manifest): the list is read in place and checked
// for canonical form without encoding it again, so the only large
// allocations are the Blocks slice and one string holding every digest.
func decodeV2(data []byte) (*Manifest, error) {
	var w manifestV2[b64Blocks]
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	m := &Manifest{FormatVersion: w.FormatVersion, Chain: w.Chain, ID: w.ID, ParentID: w.ParentID, CreatedAt: w.CreatedAt,
		SizeBytes: w.SizeBytes, BlockSize: w.BlockSize, VolumeMode: w.VolumeMode, FSType: w.FSType,
		SourceVolume: w.SourceVolume, Node: w.Node, GroupID: w.GroupID, Member: w.Member, Owner: w.Owner,
		DataBlocks: w.ChangedBlocks, ZeroBlocks: w.ZeroedBlocks, DataBytes: w.ChangedBytes,
		StoredBytes: w.StoredBytes, AllocatedBytes: w.AllocatedBytes, VolumeDigest: w.VolumeDigest, MAC: w.MAC}
	bad := m.badManifest()
	if err := m.validateCommon(bad); err != nil {
		return nil, err
	}
	if w.Owner != "" && w.FormatVersion < 3 {
		return nil, bad("a version-%d manifest has no owner field", w.FormatVersion)
	}
	// Divided, not multiplied: an imageBlocks of 2^60+1 times 48 wraps
	// around to 48, and would size the allocations below.
	if len(w.Blocks)%b64Entry != 0 || len(w.Blocks)/b64Entry != w.ImageBlocks {
		return nil, bad("block list of %d base64 bytes does not hold %d entries", len(w.Blocks), w.ImageBlocks)
	}
	if err := m.unpackBlocks(w.Blocks, w.ImageBlocks, bad); err != nil {
		return nil, err
	}
	if w.ChangedBlocks < 0 || w.ZeroedBlocks < 0 || w.ChangedBlocks > len(m.Blocks) || w.ChangedBytes < 0 || w.ChangedBytes > m.AllocatedBytes {
		return nil, bad("changed-block counts are out of range")
	}
	if !canonicalV2(m, data, len(w.Blocks)) {
		return nil, fmt.Errorf("%w: backup %q is not canonically encoded", ErrInvalidManifest, m.ID)
	}
	return m, nil
}

// canonicalV2 reports whether data is encodeV2(m), given that data's block
// list is listLen base64 bytes that unpackBlocks decoded into m.Blocks:
// m's header encoded with an empty list must be data less that list. The
// list itself is canonical once decoded: whole 48-character entries, so
// no padding, and a decoder that skipped line breaks would have come up
// short of 36 bytes an entry (unpackBlocks).
func canonicalV2(m *Manifest, data []byte, listLen int) bool {
	w := v2Header(m, []byte{})
	hdr, err := json.Marshal(&w)
	if err != nil {
		return false
	}
	p := bytes.Index(hdr, []byte(`"blocks":""`)) + len(`"blocks":"`) // the first: earlier values are escaped strings
	return len(data) == len(hdr)+listLen && bytes.Equal(data[:p], hdr[:p]) && bytes.Equal(data[p+listLen:], hdr[p:])
}

// unpackBlocks fills m.Blocks from the n entries of the base64 list and
// checks them: indices sorted, unique and inside the volume, and
// AllocatedBytes their length. It decodes a chunk of entries at a time,
// and every digest's hex goes into one string the entries share.
func (m *Manifest) unpackBlocks(list []byte, n int, bad func(string, ...any) error) error {
	const chunk = 1024 // entries
	vol := m.NumBlocks()
	m.Blocks = make([]BlockRef, 0, n)
	var hexes strings.Builder
	hexes.Grow(64 * n)
	var alloc int64
	packed := make([]byte, chunk*v2EntryLen)
	for off := 0; off < len(list); off += chunk * b64Entry {
		src := list[off:min(len(list), off+chunk*b64Entry)]
		k, err := base64.StdEncoding.Decode(packed, src)
		if err != nil || k != len(src)/b64Entry*v2EntryLen {
			return bad("block list is not base64 of whole entries")
		}
		for e := 0; e < k; e += v2EntryLen {
			i := int64(binary.LittleEndian.Uint32(packed[e:]))
			if i >= vol {
				return bad("block %d outside the volume's %d blocks", i, vol)
			}
			if j := len(m.Blocks); j > 0 && i <= m.Blocks[j-1].Index {
				return bad("block list not sorted and unique at block %d", i)
			}
			d := digest(packed[e+4 : e+v2EntryLen])
			if d.isZero() {
				return bad("block %d has the zero digest", i)
			}
			var h [64]byte
			hex.Encode(h[:], d[:])
			hexes.Write(h[:])
			m.Blocks = append(m.Blocks, BlockRef{Index: i})
			alloc += m.blockLen(i)
		}
	}
	all := hexes.String()
	for j := range m.Blocks {
		m.Blocks[j].Digest = all[64*j : 64*j+64]
	}
	if alloc != m.AllocatedBytes {
		return bad("allocatedBytes %d is not the %d bytes its blocks hold", m.AllocatedBytes, alloc)
	}
	return nil
}
