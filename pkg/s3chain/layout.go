package s3chain

import "strings"

// Object keys of the chain format (FORMAT.md §2). Every chain lives under
// its escaped name in four top-level prefixes, so listing the chains reads
// only the small config objects, never the blocks.
const (
	configPrefix   = "chains/"
	manifestPrefix = "manifests/"
	pendingPrefix  = "pending/"
	blockPrefix    = "blocks/"
)

func configKey(chain string) string { return configPrefix + encodeChain(chain) + ".json" }

func manifestDir(chain string) string { return manifestPrefix + encodeChain(chain) + "/" }

func manifestKey(chain, id string) string { return manifestDir(chain) + id + ".json" }

// tombstoneSuffix marks a deleted version-1 backup whose manifest stays
// while other version-1 manifests depend on it: manifests/E/ID.deleted.
const tombstoneSuffix = ".deleted"

func tombstoneKey(chain, id string) string { return manifestDir(chain) + id + tombstoneSuffix }

func pendingDir(chain string) string { return pendingPrefix + encodeChain(chain) + "/" }

func pendingKey(chain, token string) string { return pendingDir(chain) + token + ".json" }

func blockDir(chain string) string { return blockPrefix + encodeChain(chain) + "/" }

// blockKey fans blocks out by the first two hex digits of their digest, so a
// file store keeps directories small (256 of them).
func blockKey(chain, digest string) string {
	return blockDir(chain) + digest[:2] + "/" + digest
}

// ManifestKey returns the object key of a backup's manifest, for tools and
// tests that inspect a store directly (FORMAT.md §2).
func ManifestKey(chain, backupID string) string { return manifestKey(chain, backupID) }

// BlockKey returns the object key of the block whose digest is the given
// 64 lower-case hex digits (a Manifest BlockRef.Digest).
func BlockKey(chain, digestHex string) string { return blockKey(chain, digestHex) }

// BlockPrefix returns the key prefix under which all of a chain's blocks
// are stored.
func BlockPrefix(chain string) string { return blockDir(chain) }

// variantSep separates a block's digest from the token of a variant key:
// blocks/E/XX/DIGEST.TOKEN. A variant holds the same bytes as the digest's
// plain key; a writer stores one when the plain key may still be deleted by
// a gc that condemned it (a doom record lists it, FORMAT.md §7), because a
// delete that lands late cannot be stopped but can be made to miss.
const variantSep = "."

// variantKey is a fresh variant key of digest: a random token no gc has
// ever seen, so no pending delete can name it.
func variantKey(chain, digest string) string {
	return blockKey(chain, digest) + variantSep + randomHex(8)
}

// parseBlockKey reports the digest of a block object key of chain (plain
// or variant) and whether the key is one: other keys under the block
// prefix are not ours to judge.
func parseBlockKey(chain, key string) (digest, bool) {
	base := key[strings.LastIndexByte(key, '/')+1:]
	name, token, variant := strings.Cut(base, variantSep)
	d, err := parseDigest(name)
	if err != nil || d.isZero() || !strings.HasPrefix(key, blockKey(chain, name)) {
		return digest{}, false
	}
	if variant && !isHexToken(token) {
		return digest{}, false
	}
	if !variant && key != blockKey(chain, name) {
		return digest{}, false
	}
	return d, true
}

func isHexToken(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
