package backupid

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBadRef: a backup reference is malformed (target.ErrBadRef is this
// error).
var ErrBadRef = errors.New("invalid backup reference")

// Latest as a reference's backup names the chain's newest backup.
const Latest = "latest"

// Selector prefixes of a reference's BACKUP part besides an id and Latest.
const (
	// BeforePrefix + an RFC 3339 time T ("before:2026-11-29T10:15:00+01:00")
	// names the chain's newest backup created at or before T.
	BeforePrefix = "before:"
	// GroupPrefix + a group id names the chain's backup made by that group
	// backup (its manifest's groupId).
	GroupPrefix = "group:"
)

// Ref points at one backup: "[TARGET:]CHAIN@BACKUP", BACKUP a backup id,
// "latest", "before:RFC3339" or "group:ID". Chain names hold no ':' or '@'
// (CheckChain), so the first '@' ends the chain. The zero Ref names none.
type Ref struct {
	Target string // "" = the default target
	Chain  string
	Backup string
}

// String formats the reference as ParseRef reads it ("" for the zero Ref).
func (r Ref) String() string {
	if r == (Ref{}) {
		return ""
	}
	s := r.Chain + "@" + r.Backup
	if r.Target != "" {
		s = r.Target + ":" + s
	}
	return s
}

// Before returns T of a "before:T" reference and true, else false.
func (r Ref) Before() (time.Time, bool) {
	s, ok := strings.CutPrefix(r.Backup, BeforePrefix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// Group returns the group id of a "group:ID" reference and true, else false.
func (r Ref) Group() (string, bool) { return strings.CutPrefix(r.Backup, GroupPrefix) }

// Concrete reports whether the reference names a backup id (no selector).
func (r Ref) Concrete() bool {
	return r.Backup != Latest && !strings.HasPrefix(r.Backup, BeforePrefix) && !strings.HasPrefix(r.Backup, GroupPrefix)
}

const refForm = "the form is [TARGET:]CHAIN@BACKUP, BACKUP a backup id, latest, before:RFC3339 or group:ID"

// ParseRef reads "[TARGET:]CHAIN@BACKUP": the one parser of references,
// behind the fromBackup parameter, backup snapshot ids (Parse) and
// chainvolctl. Errors wrap ErrBadRef and say what a valid reference looks
// like.
func ParseRef(s string) (Ref, error) {
	var r Ref
	head, backup, ok := strings.Cut(s, "@")
	if !ok {
		return r, fmt.Errorf("%w %q: missing @BACKUP; %s", ErrBadRef, s, refForm)
	}
	chain := head
	if t, after, ok := strings.Cut(head, ":"); ok {
		if !ValidTargetName(t) {
			return r, fmt.Errorf("%w %q: target %q must be 1-16 [a-z0-9-]; %s", ErrBadRef, s, t, refForm)
		}
		r.Target, chain = t, after
	}
	if err := CheckChain(chain); err != nil {
		return r, fmt.Errorf("%w %q: %v", ErrBadRef, s, err)
	}
	if err := checkSelector(backup); err != nil {
		return r, fmt.Errorf("%w %q: %v; %s", ErrBadRef, s, err, refForm)
	}
	r.Chain, r.Backup = chain, backup
	return r, nil
}

// checkSelector checks the BACKUP part of a reference.
func checkSelector(b string) error {
	if t, ok := strings.CutPrefix(b, BeforePrefix); ok {
		if _, err := time.Parse(time.RFC3339Nano, t); err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time like 2026-11-29T10:15:00Z or 2026-11-29T11:15:00+01:00", t)
		}
		return nil
	}
	if g, ok := strings.CutPrefix(b, GroupPrefix); ok {
		if err := CheckBackupID(g); err != nil {
			return fmt.Errorf("group id: %v", err)
		}
		return nil
	}
	if b == Latest {
		return nil
	}
	return CheckBackupID(b)
}

// Templates a reference may use for the claim it restores into: the
// fromBackup parameter (filled from the external-provisioner's
// --extra-create-metadata parameters) and a BackupSource's chain (filled
// from the claim that names it).
const (
	TemplateNamespace = "${pvc.namespace}"
	TemplateName      = "${pvc.name}"
)

// HasTemplate reports whether s uses TemplateNamespace or TemplateName.
func HasTemplate(s string) bool {
	return strings.Contains(s, TemplateNamespace) || strings.Contains(s, TemplateName)
}

// FillTemplate replaces TemplateNamespace and TemplateName in s by a
// claim's namespace and name; the result still goes through ParseRef.
func FillTemplate(s, namespace, name string) string {
	return strings.NewReplacer(TemplateNamespace, namespace, TemplateName, name).Replace(s)
}
