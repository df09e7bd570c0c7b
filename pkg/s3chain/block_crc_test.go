package s3chain

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Block objects are written as zstd frames without the optional content
// checksum (the keyed digest checks every decoded byte), and frames with
// one, as older writers made them, still decode to the block: both for a
// plain and an encrypted chain.
func TestBlockFramesWithAndWithoutChecksum(t *testing.T) {
	data := bytes.Repeat([]byte("the quick brown fox jumps over a lazy dog\n"), 50000)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	for _, encrypted := range []bool{false, true} {
		keys, err := keysV2(secret, digestBLAKE3, encrypted)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &chainConfig{FormatVersion: 3, BlockSize: DefaultBlockSize, keys: keys}
		d := blockDigest(keys.names, data)
		obj, err := cfg.encodeBlock(data, d, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		plain := obj
		if encrypted {
			if plain, err = open(keys.aead, bytes.Clone(obj), []byte(d.String())); err != nil {
				t.Fatal(err)
			}
		}
		var h zstd.Header
		if plain[0] != kindZstd || h.Decode(plain[1:]) != nil || h.HasCheckSum {
			t.Fatalf("encrypted %v: kind %#x, frame checksum %v: want a zstd frame without one", encrypted, plain[0], h.HasCheckSum)
		}
		old, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
		withSum := old.EncodeAll(data, []byte{kindZstd})
		if encrypted {
			withSum = seal(keys.aead, withSum, []byte(d.String()))
		}
		for name, o := range map[string][]byte{"new": obj, "with checksum": withSum} {
			got, err := cfg.checkBlock(bytes.Clone(o), d, int64(len(data)), nil)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("encrypted %v, %s frame: %v", encrypted, name, err)
			}
		}
	}
}
