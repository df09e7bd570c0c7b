package s3chain

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/backupid"
)

// MaxChainNameLen is the longest chain name in bytes (backupid.MaxChainLen).
const MaxChainNameLen = backupid.MaxChainLen

// ValidChainName returns nil if name can name a chain, else an error
// wrapping ErrInvalidChain (backupid.CheckChain: 1..100 bytes of
// [A-Za-z0-9._-] segments separated by single '/', with no empty, "." or
// ".." segment).
func ValidChainName(name string) error {
	if err := backupid.CheckChain(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidChain, err)
	}
	return nil
}

// NewBackupID is a default backup id: the UTC second of t and 8 random hex
// digits, like "20261129T101500Z-3f9a0c17" (25 bytes). An id must never
// name two backups, also after the first is deleted: a stale reference
// (a kept VolumeSnapshotContent, a fromBackup parameter) would restore
// the second's bytes. A deleted backup leaves no trace in its chain, so a
// free id cannot be told from a used one by looking; the 32 random bits
// make a reuse need the same second and the same draw (1 in 4 billion per
// pair of backups made in one second), whatever the clocks of the writers.
func NewBackupID(t time.Time) string {
	return t.UTC().Format(backupIDTime) + "-" + randomHex(4)
}

// MaxBackupIDLen is the longest backup id in bytes.
const MaxBackupIDLen = backupid.MaxBackupIDLen

// ValidBackupID returns nil if id can name a backup, else an error wrapping
// ErrInvalidChain (backupid.CheckBackupID: 1..64 bytes of [A-Za-z0-9._-]
// starting with a letter or digit; "latest" is reserved for the newest
// backup).
func ValidBackupID(id string) error {
	if err := backupid.CheckBackupID(id); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidChain, err)
	}
	return nil
}

// encodeChain turns a chain name into one key segment: letters, digits and
// '-' stay, every other byte becomes "_xx" (lower-case hex). The result has
// no '/', never starts with '.', and decodes back uniquely (FORMAT.md §2).
func encodeChain(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if backupid.IsAlnum(c) || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// decodeChain reverses encodeChain; it fails on anything encodeChain would
// not produce for a valid name.
func decodeChain(seg string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", fmt.Errorf("%w: bad escaped chain %q", ErrInvalidChain, seg)
		}
		v, err := hex.DecodeString(seg[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("%w: bad escaped chain %q", ErrInvalidChain, seg)
		}
		b.WriteByte(v[0])
		i += 2
	}
	name := b.String()
	if err := ValidChainName(name); err != nil || encodeChain(name) != seg {
		return "", fmt.Errorf("%w: bad escaped chain %q", ErrInvalidChain, seg)
	}
	return name, nil
}
