package lazy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrRecord is a hydration record that does not belong to the image (a
// different block count or size) or is not a record at all: nothing it
// says can be trusted, and OpenWritable refuses it.
var ErrRecord = errors.New("hydration record does not match the backup")

// recordMagic opens a hydration record; the 24-byte header is the magic,
// then the block count and the block size (little-endian uint64s), then
// one bit per block (bit i%8 of byte i/8; 1: the block is in the data
// file). 32 GiB of 1 MiB blocks is 4 KiB of bits.
const recordMagic = "CVHYDR01"

const recordHeader = 24

// encodeRecord returns the record of the marks have, blocks of bs bytes.
func encodeRecord(have []bool, bs int64) []byte {
	out := make([]byte, recordHeader+(len(have)+7)/8)
	copy(out, recordMagic)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(have)))
	binary.LittleEndian.PutUint64(out[16:], uint64(bs))
	for i, h := range have {
		if h {
			out[recordHeader+i/8] |= 1 << (i % 8)
		}
	}
	return out
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
	if len(raw) != recordHeader+(len(have)+7)/8 || string(raw[:8]) != recordMagic ||
		binary.LittleEndian.Uint64(raw[8:]) != uint64(len(have)) || binary.LittleEndian.Uint64(raw[16:]) != uint64(src.BlockSize()) {
		return nil, fmt.Errorf("%w: %s (%d bytes; the backup has %d blocks of %d bytes)", ErrRecord, path, len(raw), len(have), src.BlockSize())
	}
	for i := range have {
		have[i] = raw[recordHeader+i/8]&(1<<(i%8)) != 0
	}
	return have, nil
}
