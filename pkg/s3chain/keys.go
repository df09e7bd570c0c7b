package s3chain

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// Key separation (FORMAT.md §3.1). Format version 1 used one per-chain key
// for two jobs, block names and manifest MACs, so a block name (the HMAC
// of 4 MiB a bucket writer got backed up) could serve as the MAC of a
// forged manifest. Version 2 derives one key per purpose with HKDF-SHA256
// (RFC 5869) from the chain secret, and the chain's own encryption keys
// from the repository key, each under a distinct label. Version 3 keeps
// that scheme and adds one label, for its BLAKE3 block-name key: a key of
// another algorithm gets its own label, so no key ever serves two.
const (
	labelBlockNames   = "chainvol v2 block names"
	labelBlockNamesV3 = "chainvol v3 block names"
	labelManifest     = "chainvol v2 manifest mac"
	labelBlockSeal    = "chainvol v2 block encryption"
	labelSecretWrap   = "chainvol v2 chain secret wrap"
)

// deriveKey returns the 32-byte HKDF-SHA256 key of secret for label.
func deriveKey(secret []byte, label string) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, label, 32)
	if err != nil { // only for lengths HKDF cannot produce
		panic(err)
	}
	return k
}

// chainKeys are the opened keys of one chain.
type chainKeys struct {
	// names keys block digests (object names) with the chain's algorithm.
	names namesKey
	// macV1 keys the MAC of version-1 manifests (the same key as names:
	// the flaw version 2 fixes); macV2 keys version-2 and -3 manifests.
	macV1, macV2 []byte
	// aead seals block objects; nil when the chain is not encrypted.
	aead cipher.AEAD
}

// keysV1 are the keys of a version-1 chain: its digest key names blocks
// (HMAC-SHA256) and MACs v1 manifests; v2 and v3 manifests written into it
// get a derived MAC key; blocks are sealed with the repository key itself.
func keysV1(digestKey []byte, repo cipher.AEAD) chainKeys {
	return chainKeys{names: namesKey{algo: digestHMAC, key: digestKey}, macV1: digestKey,
		macV2: deriveKey(digestKey, labelManifest), aead: repo}
}

// keysV2 are the keys of a version-2 or -3 chain, all derived from its
// secret; algo (the config's digest, checked by openConfig) picks the
// block-name key: HMAC-SHA256 under the v2 label, BLAKE3 under the v3 one.
func keysV2(secret []byte, algo string, encrypted bool) (chainKeys, error) {
	names := namesKey{algo: digestHMAC, key: deriveKey(secret, labelBlockNames)}
	if algo == digestBLAKE3 {
		names = namesKey{algo: digestBLAKE3, key: deriveKey(secret, labelBlockNamesV3)}
	}
	k := chainKeys{names: names, macV2: deriveKey(secret, labelManifest)}
	if encrypted {
		var err error
		if k.aead, err = newAEAD(deriveKey(secret, labelBlockSeal)); err != nil {
			return k, fmt.Errorf("block key of chain: %w", err)
		}
	}
	return k, nil
}
