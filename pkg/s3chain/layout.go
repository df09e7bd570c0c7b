package s3chain

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
