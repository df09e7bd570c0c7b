package backend

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
)

// IDPattern is the only shape of lvol id the pool makes or accepts: a kind
// prefix ("vol-" for volumes, "snap-" for snapshots) and 20 lowercase hex
// digits (80 random bits), so at most 25 bytes, well under the 64-byte limit
// promised by LVol.ID and the 128-byte limit of CSI volume and snapshot ids
// (CSI spec, "Size Limits"). An id matching it is safe as a path element.
var IDPattern = regexp.MustCompile(`^(vol|snap)-[0-9a-f]{20}$`)

// maxNameBytes bounds CreateOptions.Name; CSI names are at most 128 bytes
// (CSI spec, "Size Limits"), bbolt keys at most 32 KiB.
const maxNameBytes = 1024

// ValidID reports whether id matches IDPattern. Every method of FilePool
// checks it before an id is used in a path or a metadata key, and answers
// ErrNotFound for any id that fails it (for example "../../etc").
func ValidID(id string) bool {
	return len(id) <= 64 && IDPattern.MatchString(id)
}

// idPrefix is the id prefix of a kind, or "" for an unknown kind.
func idPrefix(k Kind) string {
	switch k {
	case KindVolume:
		return "vol-"
	case KindSnapshot:
		return "snap-"
	}
	return ""
}

// newID returns a fresh random id for kind k (which must be valid).
func newID(k Kind) (string, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate lvol id: %w", err)
	}
	return idPrefix(k) + hex.EncodeToString(b[:]), nil
}
