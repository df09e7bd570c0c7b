package s3chain

import "fmt"

// badManifest returns the error constructor for m's structural faults.
func (m *Manifest) badManifest() func(string, ...any) error {
	return func(format string, a ...any) error {
		return fmt.Errorf("%w: backup %q: %s", ErrInvalidManifest, m.ID, fmt.Sprintf(format, a...))
	}
}

// validateCommon checks the fields every version shares (FORMAT.md §4).
func (m *Manifest) validateCommon(bad func(string, ...any) error) error {
	if err := ValidChainName(m.Chain); err != nil {
		return bad("%v", err)
	}
	if err := ValidBackupID(m.ID); err != nil {
		return bad("%v", err)
	}
	if m.ParentID != "" {
		if err := ValidBackupID(m.ParentID); err != nil {
			return bad("%v", err)
		}
	}
	if err := checkBlockSize(m.BlockSize); err != nil {
		return bad("%v", err)
	}
	if m.SizeBytes < 0 || m.SizeBytes > MaxBlocks*m.BlockSize {
		return bad("volume size %d bytes is more than %d blocks", m.SizeBytes, MaxBlocks)
	}
	if !isHexDigest(m.VolumeDigest) || !isHexDigest(m.MAC) {
		return bad("volumeDigest and mac must be 64 hex digits")
	}
	return nil
}

// validateV1 checks what a version-1 manifest must satisfy on its own.
func (m *Manifest) validateV1() error {
	bad := m.badManifest()
	if err := m.validateCommon(bad); err != nil {
		return err
	}
	if (m.ParentID == "") != (m.ParentDigest == "") {
		return bad("parentId and parentDigest must be both set or both empty")
	}
	if m.ParentID != "" && !isHexDigest(m.ParentDigest) {
		return bad("parentDigest is not 64 hex digits")
	}
	return m.validateBlocks(bad)
}

func (m *Manifest) validateBlocks(bad func(string, ...any) error) error {
	n := m.NumBlocks()
	var data, zero int
	var dataBytes int64
	for k, b := range m.Blocks {
		if b.Index < 0 || b.Index >= n {
			return bad("block %d outside the volume's %d blocks", b.Index, n)
		}
		if k > 0 && b.Index <= m.Blocks[k-1].Index {
			return bad("block list not sorted and unique at block %d", b.Index)
		}
		switch {
		case b.Digest == "":
			zero++
		case isHexDigest(b.Digest):
			data++
			dataBytes += m.blockLen(b.Index)
		default:
			return bad("block %d has a malformed digest", b.Index)
		}
	}
	if m.ParentID == "" && zero > 0 {
		return bad("a full backup lists zero blocks")
	}
	if data != m.DataBlocks || zero != m.ZeroBlocks || dataBytes != m.DataBytes {
		return bad("counts do not match the block list")
	}
	return nil
}

// MaxBlocks bounds the blocks of one volume, so that a manifest cannot make
// a restore allocate without limit: 1 Mi blocks are 2 TiB at the default
// 2 MiB and 64 TiB at 64 MiB blocks (a new chain of a larger volume gets
// larger blocks: newChainBlockSize); the block map then takes 32 MiB.
const MaxBlocks = 1 << 20

// MaxVolumeSize is the largest volume, in bytes, a chain of block size bs
// (bytes) holds: MaxBlocks blocks, 64 GiB at 64 KiB blocks.
func MaxVolumeSize(bs int64) int64 { return MaxBlocks * bs }

// checkFits returns ErrVolumeTooLarge, naming the limit in bytes, when a
// volume of size bytes has more than MaxBlocks blocks of chain's block
// size bs.
func checkFits(chain string, size, bs int64) error {
	if lim := MaxVolumeSize(bs); size > lim {
		return fmt.Errorf("%w: %d bytes is more than chain %q holds: %d bytes (%d blocks of its block size, %d bytes, fixed by its first backup); back it up into a new chain",
			ErrVolumeTooLarge, size, chain, lim, MaxBlocks, bs)
	}
	return nil
}

// checkBlockSize enforces MinBlockSize..MaxBlockSize and 4 KiB alignment.
func checkBlockSize(bs int64) error {
	if bs < MinBlockSize || bs > MaxBlockSize || bs%4096 != 0 {
		return fmt.Errorf("block size %d bytes is not a multiple of 4096 in [%d, %d]", bs, MinBlockSize, MaxBlockSize)
	}
	return nil
}

// isHexDigest reports whether s is 64 lower-case hex digits (32 bytes).
func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
