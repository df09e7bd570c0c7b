package s3chain

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// digest is a block's keyed digest (blockDigest); the zero value stands for an
// all-zero block, which has no object (a real digest of 32 zero bytes has
// probability 2^-256).
type digest [32]byte

func (d digest) isZero() bool { return d == digest{} }

func (d digest) String() string { return hex.EncodeToString(d[:]) }

// parseDigest reads a manifest digest; "" is the zero block.
func parseDigest(s string) (digest, error) {
	var d digest
	if s == "" {
		return d, nil
	}
	if !isHexDigest(s) {
		return d, fmt.Errorf("%w: malformed digest %q", ErrInvalidManifest, s)
	}
	_, err := hex.Decode(d[:], []byte(s))
	return d, err
}

// Block object payload kinds, the first byte of the (decrypted) object.
const (
	kindRaw  = 0x01 // the block bytes as they are (incompressible)
	kindZstd = 0x02 // one zstd frame (RFC 8878) of the block bytes
)

// zstd coders are safe for concurrent EncodeAll/DecodeAll and keep their
// own pools, so one pair serves every worker of every Repo.
var coders = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	// No frame checksum either (RFC 8878 makes it optional): it is not
	// read (below), and its xxhash64 of every byte was 9% of a backup
	// worker's CPU (BenchmarkBackupS3, docs/BENCHMARKS.md "Backups,
	// session 10"). Frames with one, of older writers, still decode.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err)
	}
	// The frame's own checksum (xxhash64) is not checked: every decoded
	// block is checked against its keyed digest right after (checkBlock),
	// which no corruption passes, and the xxhash cost ~2% of a restore's
	// CPU (BenchmarkRestoreS3, docs/BENCHMARKS.md).
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxBlockSize+1), zstd.WithDecoderConcurrency(0),
		zstd.IgnoreChecksum(true))
	if err != nil {
		panic(err)
	}
	return enc, dec
})

// maxBlockObject bounds a block object of the chain in bytes: the block,
// the kind byte, and the nonce and tag of a sealed object (FORMAT.md §6).
func (cfg *chainConfig) maxBlockObject() int64 { return cfg.BlockSize + 64 }

// encodeBlock returns the object of one block (FORMAT.md §6): kind byte and
// payload, zstd-compressed when that saves space, then sealed when the chain
// is encrypted. It decodes the result again and compares, so a codec bug
// never reaches the store (restic verifies before upload the same way).
// scratch holds the object and check the decoded copy when their capacity
// allows (the backup worker's buffers), else they are allocated. Only a
// sealed object is copied for the check (decodeBlock decrypts in place):
// the copy and a fresh decode buffer for every block were 20% of a full
// backup's block CPU (BenchmarkBackupS3, docs/BENCHMARKS.md).
func (cfg *chainConfig) encodeBlock(data []byte, d digest, scratch, check []byte) ([]byte, error) {
	enc, _ := coders()
	obj := enc.EncodeAll(data, append(scratch[:0], kindZstd))
	if len(obj) >= len(data)+1 {
		obj = append(obj[:0], kindRaw)
		obj = append(obj, data...)
	}
	in := obj
	if cfg.keys.aead != nil {
		obj = seal(cfg.keys.aead, obj, []byte(d.String()))
		in = slices.Clone(obj)
	}
	back, err := cfg.decodeBlock(in, d, int64(len(data)), check)
	if err != nil || !bytes.Equal(back, data) {
		return nil, fmt.Errorf("block codec self-check failed: %v", err)
	}
	return obj, nil
}

// decodeBlock opens a block object, decrypting in place, into buf (reused
// when large enough) or, for a raw block, into obj itself, and checks its
// length (want bytes). It does not know the digest key: the caller checks
// the digest (checkBlock). A zstd frame must declare exactly want bytes
// before it is decoded, so a hostile object cannot make it allocate more.
func (cfg *chainConfig) decodeBlock(obj []byte, d digest, want int64, buf []byte) ([]byte, error) {
	var err error
	if cfg.keys.aead != nil {
		if obj, err = open(cfg.keys.aead, obj, []byte(d.String())); err != nil {
			return nil, fmt.Errorf("cannot decrypt: %v", err)
		}
	}
	if len(obj) == 0 {
		return nil, fmt.Errorf("empty object")
	}
	var out []byte
	switch obj[0] {
	case kindRaw:
		out = obj[1:] // obj is ours (a fresh Get, or the restore worker's buffer): no copy
	case kindZstd:
		var h zstd.Header
		if err := h.Decode(obj[1:]); err != nil || !h.HasFCS || h.FrameContentSize != uint64(want) {
			return nil, fmt.Errorf("zstd frame does not declare the block's %d bytes", want)
		}
		_, dec := coders()
		if out, err = dec.DecodeAll(obj[1:], buf[:0]); err != nil {
			return nil, fmt.Errorf("cannot decompress: %v", err)
		}
	default:
		return nil, fmt.Errorf("unknown block kind %#x", obj[0])
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("block is %d bytes, want %d", len(out), want)
	}
	return out, nil
}

// decodesInPlace reports whether obj is a raw block of an unsealed chain,
// which decodeBlock returns from obj itself without touching its buffer.
func (cfg *chainConfig) decodesInPlace(obj []byte) bool {
	return cfg.keys.aead == nil && len(obj) > 0 && obj[0] == kindRaw
}

// checkBlock decodes a block object into buf and verifies its length and
// keyed digest.
func (cfg *chainConfig) checkBlock(obj []byte, d digest, want int64, buf []byte) ([]byte, error) {
	data, err := cfg.decodeBlock(obj, d, want, buf)
	if err != nil {
		return nil, err
	}
	if got := blockDigest(cfg.keys.names, data); got != d {
		return nil, fmt.Errorf("content digest %s does not match", got)
	}
	return data, nil
}
