package target

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// ErrBadRef: a backup reference is malformed.
var ErrBadRef = errors.New("invalid backup reference")

// Latest as a reference's backup names the chain's newest backup.
const Latest = "latest"

// Ref points at one backup: "[TARGET:]CHAIN@BACKUP", BACKUP a backup id or "latest".
type Ref struct {
	Target string // "" = the default target
	Chain  string
	Backup string
}

// String formats the reference as ParseRef reads it.
func (r Ref) String() string {
	s := r.Chain + "@" + r.Backup
	if r.Target != "" {
		s = r.Target + ":" + s
	}
	return s
}

// ParseRef reads "[TARGET:]CHAIN@BACKUP". Errors wrap ErrBadRef and say
// what a valid reference looks like.
func ParseRef(s string) (Ref, error) {
	var r Ref
	rest := s
	if t, after, ok := strings.Cut(s, ":"); ok {
		if !namePattern.MatchString(t) {
			return r, fmt.Errorf("%w %q: target %q must be 1-16 [a-z0-9-]; the form is [TARGET:]CHAIN@BACKUP", ErrBadRef, s, t)
		}
		r.Target, rest = t, after
	}
	chain, backup, ok := strings.Cut(rest, "@")
	if !ok {
		return r, fmt.Errorf("%w %q: missing @BACKUP (a backup id or %q); the form is [TARGET:]CHAIN@BACKUP", ErrBadRef, s, Latest)
	}
	if err := s3chain.ValidChainName(chain); err != nil {
		return r, fmt.Errorf("%w %q: %v", ErrBadRef, s, err)
	}
	if backup != Latest {
		if err := s3chain.ValidBackupID(backup); err != nil {
			return r, fmt.Errorf("%w %q: %v", ErrBadRef, s, err)
		}
	}
	r.Chain, r.Backup = chain, backup
	return r, nil
}
