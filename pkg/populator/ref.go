package populator

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/chainvol/chainvol/pkg/backupid"
)

// RefFor is the backup claim NAMESPACE/NAME gets from spec: the chain's
// templates filled from the claim (backupid.FillTemplate, fromBackup's
// rules), the joined "[TARGET:]CHAIN@BACKUP" read by backupid.ParseRef
// (the one parser), the target defaulted to defaultTarget. A claim maps
// to its own chain by construction: nothing matches names by prefix, so
// data-db-1 never gets data-db-10's backup. Errors wrap backupid.ErrBadRef
// and name the claim (a long claim name can make the chain exceed
// backupid.MaxChainLen).
func RefFor(spec BackupSourceSpec, namespace, name, defaultTarget string) (backupid.Ref, error) {
	raw := backupid.FillTemplate(spec.Chain, namespace, name) + "@" + spec.Backup
	if spec.Target != "" {
		raw = spec.Target + ":" + raw
	}
	r, err := backupid.ParseRef(raw)
	if err != nil {
		return r, fmt.Errorf("claim %s/%s: %w", namespace, name, err)
	}
	if r.Target == "" {
		r.Target = defaultTarget
	}
	if !backupid.ValidTargetName(r.Target) {
		return r, fmt.Errorf("claim %s/%s: %w: no target: set spec.target or the populator's -default-target", namespace, name, backupid.ErrBadRef)
	}
	return r, nil
}

// Handle is the snapshot handle of r for the pre-provisioned content: a
// backup snapshot id whose BACKUP may be a selector (backupid.ParseSource
// reads it; the driver resolves it when it lists and restores it).
func Handle(r backupid.Ref) string { return backupid.Format(r) }

// ordinalPattern is a StatefulSet claim's name: TEMPLATE-SET-ORDINAL.
var ordinalPattern = regexp.MustCompile(`^(.+)-(0|[1-9][0-9]*)$`)

// Ordinal returns the StatefulSet ordinal at the end of a claim's name
// ("data-db-12" → 12) and true, or false for a name without one. It only
// labels messages ("member 12"); the chain comes from RefFor.
func Ordinal(claim string) (int, bool) {
	m := ordinalPattern.FindStringSubmatch(claim)
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[2])
	return i, err == nil
}

// member describes a claim for events: "claim data-db-2 (member 2)".
func member(claim string) string {
	if i, ok := Ordinal(claim); ok {
		return fmt.Sprintf("claim %s (member %d)", claim, i)
	}
	return "claim " + claim
}
