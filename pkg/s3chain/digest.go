package s3chain

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/zeebo/blake3"
)

// Block digest algorithms: the config's `digest` field (FORMAT.md §3, §6).
// A chain's config fixes it for the chain's whole life, so its block
// objects keep their names: version 1 and 2 chains use digestHMAC,
// version-3 chains digestBLAKE3 (configDigest).
const (
	digestHMAC   = "hmac-sha256"
	digestBLAKE3 = "blake3"
)

// configDigest returns the block digest algorithm a config of format
// version v must name, or "" for a version this package does not read.
func configDigest(v int) string {
	switch v {
	case 1, 2:
		return digestHMAC
	case 3:
		return digestBLAKE3
	}
	return ""
}

// namesKey is the key of a chain's block names with its algorithm
// (digestHMAC or digestBLAKE3); key is 32 bytes.
type namesKey struct {
	algo string
	key  []byte
}

// blockDigest returns the digest of data under the chain's names key k: a
// keyed PRF, so block names reveal nothing about content to whoever cannot
// read the key. HMAC-SHA256 (RFC 2104) for version 1 and 2 chains; keyed
// BLAKE3 (its keyed_hash mode) for version 3, 2-3x faster on 2 MiB
// blocks here (BenchmarkBlockDigest), and every backed-up and restored
// byte is hashed.
func blockDigest(k namesKey, data []byte) digest {
	var d digest
	if k.algo == digestBLAKE3 {
		h, err := blake3.NewKeyed(k.key)
		if err != nil { // only for a key that is not 32 bytes: a bug
			panic(err)
		}
		_, _ = h.Write(data)
		h.Sum(d[:0])
		return d
	}
	h := hmac.New(sha256.New, k.key)
	h.Write(data)
	h.Sum(d[:0])
	return d
}
