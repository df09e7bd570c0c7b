// Package backupid is the codec of backup snapshot ids, the CSI snapshot
// ids (and VolumeSnapshotContent snapshotHandles) that name an archived
// backup: "backup:TARGET:CHAIN@BACKUP". The id names the target, chain
// and backup so that it stays meaningful in another cluster. When it would
// exceed the CSI spec's 128-byte limit for ids, the chain is replaced by
// "~" and 32 hex digits of its SHA-256, resolved by listing the target's
// chains (see Hashes). The driver and chainvolctl both use it.
package backupid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const (
	// Prefix starts every backup snapshot id.
	Prefix = "backup:"
	// MaxLen is the CSI spec's limit for ids in bytes.
	MaxLen = 128
	// HashedMark starts a chain replaced by its hash.
	HashedMark = "~"
)

// Is reports whether a snapshot id names a backup.
func Is(id string) bool { return strings.HasPrefix(id, Prefix) }

// Format builds the snapshot id of a backup (at most MaxLen bytes when
// r.Target and r.Backup are valid names). r must name a target.
func Format(r Ref) string {
	id := Prefix + r.String()
	if len(id) <= MaxLen {
		return id
	}
	return Prefix + Ref{Target: r.Target, Chain: HashedMark + ChainHash(r.Chain), Backup: r.Backup}.String()
}

// ChainHash is the 32 hex digits that replace a long chain in an id.
func ChainHash(chain string) string {
	h := sha256.Sum256([]byte(chain))
	return hex.EncodeToString(h[:16])
}

// Hashed reports whether r, parsed from a snapshot id, holds a chain
// replaced by its hash ("~HEX"): its name needs a listing of the target.
func (r Ref) Hashed() bool { return strings.HasPrefix(r.Chain, HashedMark) }

// Hashes reports whether id's chain part (hashed or not) names chain.
func Hashes(idChain, chain string) bool {
	return idChain == chain || idChain == HashedMark+ChainHash(chain)
}

// Parse splits a backup snapshot id into a reference; a hashed chain comes
// back as "~HEX" (match it with Hashes). The backup is an id or "latest";
// "before:" and "group:" selectors name no single backup and are refused
// (ParseSource takes them). Errors wrap ErrBadRef.
func Parse(id string) (Ref, error) { return parse(id, false) }

// ParseSource reads a snapshot id that a restore reads from, as Parse, but
// also with a "before:T" or "group:ID" selector: the snapshot handles the
// volume populator writes for a BackupSource (pkg/populator), resolved by
// the driver when it restores or lists the snapshot. Errors wrap ErrBadRef.
func ParseSource(id string) (Ref, error) { return parse(id, true) }

// parse is Parse, with selectors allowed when selectors is true.
func parse(id string, selectors bool) (Ref, error) {
	one := func(r Ref) bool { return selectors || r.Concrete() || r.Backup == Latest }
	rest, ok := strings.CutPrefix(id, Prefix)
	if !ok {
		return Ref{}, fmt.Errorf("%w: snapshot id %q does not start with %q", ErrBadRef, id, Prefix)
	}
	if t, after, ok := strings.Cut(rest, ":"); ok {
		if c, b, ok := strings.Cut(after, "@"); ok && strings.HasPrefix(c, HashedMark) {
			r := Ref{Target: t, Chain: c, Backup: b}
			if _, err := ParseRef(t + ":x@" + b); err != nil || !one(r) {
				return r, fmt.Errorf("%w: snapshot id %q: bad target or backup", ErrBadRef, id)
			}
			return r, nil
		}
	}
	r, err := ParseRef(rest)
	if err == nil && r.Target == "" {
		err = fmt.Errorf("%w: snapshot id %q names no target", ErrBadRef, id)
	}
	if err == nil && !one(r) {
		err = fmt.Errorf("%w: snapshot id %q names a selector, not one backup", ErrBadRef, id)
	}
	return r, err
}
