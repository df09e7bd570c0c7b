package protomodel

import "fmt"

// Kinds of violation of "every backup reported ready restores".
const (
	LostManifest = "manifest gone"
	LostBlock    = "block gone"
	LostConfig   = "config gone or replaced"
	// LostListed: a backup a listing shows does not restore (Scope.CheckListed).
	LostListed = "listed backup does not restore"
)

// violation returns what fails to restore in s, or "".
func violation(s *State, sc *Scope) (kind, detail string) {
	for b := range 1 + len(sc.Writers) { // the initial backup, then writer b-1's
		slot, by := 0, uint8(b)
		if b > 0 {
			slot = sc.slot(b - 1)
		}
		if !owed(s, sc, b) {
			continue
		}
		if m := s.st.mans[slot]; !m.exists || m.by != by {
			return LostManifest, fmt.Sprintf("ready backup %s has no manifest", backupName(b))
		}
		if kind, detail := unrestorable(s, slot, "ready backup "+backupName(b)); kind != "" {
			return kind, detail
		}
	}
	for slot := range maxSlots {
		if sc.CheckListed && listed(s, sc, slot) {
			if kind, detail := unrestorable(s, slot, "listed backup "+backupName(int(s.st.mans[slot].by))); kind != "" {
				return LostListed, kind + ": " + detail
			}
		}
	}
	return "", ""
}

// unrestorable says why slot's manifest would not restore, or "".
func unrestorable(s *State, slot int, what string) (kind, detail string) {
	m := s.st.mans[slot]
	if m.cfgVer != s.st.cfg {
		return LostConfig, fmt.Sprintf("%s was signed with config #%d, the chain has #%d", what, m.cfgVer, s.st.cfg)
	}
	for d := range maxDig {
		if m.digs&(1<<d) != 0 && s.st.blocks&digKeys(d) == 0 {
			return LostBlock, fmt.Sprintf("%s lists digest d%d, no key of it exists", what, d)
		}
	}
	return "", ""
}

// listed tells whether a listing shows slot's manifest: every one without
// state records, else one whose ready record names it.
func listed(s *State, sc *Scope, slot int) bool {
	m, rec := s.st.mans[slot], s.st.recs[slot]
	return m.exists && (!sc.Ready || rec == record{state: recReady, by: m.by})
}

// owed tells whether backup b (0 the initial, else writer b-1's) was
// reported ready and not deleted.
func owed(s *State, sc *Scope, b int) bool {
	if b == 0 {
		return sc.Initial != 0 && !s.deleted0
	}
	return s.p[b-1].ready && !s.p[b-1].gone0
}

func backupName(b int) string {
	if b == 0 {
		return "B0 (initial)"
	}
	return fmt.Sprintf("of w%d", b-1)
}

func slotName(slot int) string {
	if slot == 0 {
		return "B0 (initial)"
	}
	return fmt.Sprintf("of w%d", slot-1)
}
