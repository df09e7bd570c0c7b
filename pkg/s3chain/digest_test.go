package s3chain

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"testing"

	"github.com/zeebo/blake3"
)

// blockDigest computes the chain's algorithm under its key: HMAC-SHA256
// for hmac-sha256 chains, BLAKE3's keyed mode for blake3 ones, and the two
// never agree.
func TestBlockDigestAlgorithms(t *testing.T) {
	key, data := make([]byte, 32), make([]byte, 5000)
	_, _ = rand.Read(key)
	_, _ = rand.Read(data)
	mac := hmac.New(sha256.New, key)
	mac.Write(data)
	keyed, _ := blake3.NewKeyed(key)
	keyed.Write(data)
	h, b := blockDigest(namesKey{digestHMAC, key}, data), blockDigest(namesKey{digestBLAKE3, key}, data)
	if !hmac.Equal(h[:], mac.Sum(nil)) || !hmac.Equal(b[:], keyed.Sum(nil)) || h == b {
		t.Fatalf("hmac %s, blake3 %s", h, b)
	}
	plain := blake3.Sum256(data)
	if b == digest(plain) {
		t.Fatal("blake3 digest is not keyed")
	}
}

// BenchmarkBlockDigest hashes one default-size (2 MiB) block with each
// algorithm, one core: the cost every backed-up and restored byte pays
// (FORMAT.md §6). Run: go test ./pkg/s3chain -run '^$' -bench BlockDigest.
func BenchmarkBlockDigest(b *testing.B) {
	key, data := make([]byte, 32), make([]byte, DefaultBlockSize)
	_, _ = rand.Read(key)
	_, _ = rand.Read(data)
	for _, algo := range []string{digestHMAC, digestBLAKE3} {
		b.Run(algo, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				blockDigest(namesKey{algo, key}, data)
			}
		})
	}
}
