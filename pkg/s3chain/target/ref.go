package target

import "github.com/chainvol/chainvol/pkg/backupid"

// References live in the leaf package backupid, so that its codec and the
// driver's parameters need no store; these names keep target's callers.

// ErrBadRef: a backup reference is malformed (backupid.ErrBadRef).
var ErrBadRef = backupid.ErrBadRef

// Latest as a reference's backup names the chain's newest backup.
const Latest = backupid.Latest

// Selector prefixes of a reference's BACKUP part (backupid.BeforePrefix,
// backupid.GroupPrefix).
const (
	BeforePrefix = backupid.BeforePrefix
	GroupPrefix  = backupid.GroupPrefix
)

// Ref points at one backup: "[TARGET:]CHAIN@BACKUP" (backupid.Ref).
type Ref = backupid.Ref

// ParseRef reads "[TARGET:]CHAIN@BACKUP" (backupid.ParseRef). Errors wrap
// ErrBadRef.
func ParseRef(s string) (Ref, error) { return backupid.ParseRef(s) }
