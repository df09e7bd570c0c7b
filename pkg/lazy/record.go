package lazy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
)

// ErrRecord is a hydration record that does not belong to the image (a
// different size, block count or block size), is not a record at all, or
// fails its checksum (torn, bits flipped): nothing it says can be
// trusted, and OpenWritable refuses it.
var ErrRecord = errors.New("hydration record does not match the backup")

// recordMagic opens a hydration record; the 32-byte header is the magic,
// then the image's size in bytes, the block count and the block size
// (little-endian uint64s), then one bit per block (bit i%8 of byte i/8;
// 1: the block is in the data file), then the CRC-32C (Castagnoli,
// little-endian) of all that: a flipped bit would mark a block that is
// not in the data file. 32 GiB of 1 MiB blocks is 4 KiB of bits.
const recordMagic = "CVHYDR02"

const recordHeader, recordSum = 32, 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordLen is the length in bytes of the record of n blocks.
func recordLen(n int) int { return recordHeader + (n+7)/8 + recordSum }

// encodeRecord returns the record of src's marks have.
func encodeRecord(have []bool, src Source) []byte {
	out := make([]byte, recordLen(len(have)))
	copy(out, recordMagic)
	binary.LittleEndian.PutUint64(out[8:], uint64(src.SizeBytes()))
	binary.LittleEndian.PutUint64(out[16:], uint64(len(have)))
	binary.LittleEndian.PutUint64(out[24:], uint64(src.BlockSize()))
	for i, h := range have {
		if h {
			out[recordHeader+i/8] |= 1 << (i % 8)
		}
	}
	sum := len(out) - recordSum
	binary.LittleEndian.PutUint32(out[sum:], crc32.Checksum(out[:sum], castagnoli))
	return out
}

// recordFits reports whether raw is a whole record of src's dimensions.
func recordFits(raw []byte, src Source) bool {
	if len(raw) != recordLen(int(src.NumBlocks())) || string(raw[:8]) != recordMagic {
		return false
	}
	sum := len(raw) - recordSum
	le := binary.LittleEndian
	return le.Uint32(raw[sum:]) == crc32.Checksum(raw[:sum], castagnoli) && le.Uint64(raw[8:]) == uint64(src.SizeBytes()) &&
		le.Uint64(raw[16:]) == uint64(src.NumBlocks()) && le.Uint64(raw[24:]) == uint64(src.BlockSize())
}

// loadRecord returns the marks of the record at path for src's blocks;
// none when there is no record. Errors: ErrRecord, the file's.
func loadRecord(path string, src Source) ([]bool, error) {
	have := make([]bool, src.NumBlocks())
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return have, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hydration record: %w", err)
	}
	if !recordFits(raw, src) {
		return nil, fmt.Errorf("%w: %s (%d bytes; the backup is %d bytes in %d blocks of %d)", ErrRecord, path, len(raw),
			src.SizeBytes(), len(have), src.BlockSize())
	}
	for i := range have {
		have[i] = raw[recordHeader+i/8]&(1<<(i%8)) != 0
	}
	return have, nil
}
