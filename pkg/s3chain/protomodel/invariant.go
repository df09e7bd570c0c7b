package protomodel

import "fmt"

// Kinds of violation of "every backup reported ready restores".
const (
	LostManifest = "manifest gone"
	LostBlock    = "block gone"
	LostConfig   = "config gone or replaced"
)

// violation returns what fails to restore in s, or "".
func violation(s *State, sc *Scope) (kind, detail string) {
	for slot := range maxSlots {
		if !owed(s, sc, slot) {
			continue
		}
		m := s.st.mans[slot]
		if !m.exists {
			return LostManifest, fmt.Sprintf("ready backup %s has no manifest", slotName(slot))
		}
		if m.cfgVer != s.st.cfg {
			return LostConfig, fmt.Sprintf("ready backup %s was signed with config #%d, the chain has #%d", slotName(slot), m.cfgVer, s.st.cfg)
		}
		for d := range maxDig {
			if m.digs&(1<<d) != 0 && s.st.blocks&digKeys(d) == 0 {
				return LostBlock, fmt.Sprintf("ready backup %s lists digest d%d, no key of it exists", slotName(slot), d)
			}
		}
	}
	return "", ""
}

// owed tells whether the backup of slot was reported ready and not deleted.
func owed(s *State, sc *Scope, slot int) bool {
	if slot == 0 {
		return sc.Initial != 0 && !s.deleted0
	}
	return slot-1 < len(sc.Writers) && s.p[slot-1].ready
}

func slotName(slot int) string {
	if slot == 0 {
		return "B0 (initial)"
	}
	return fmt.Sprintf("of w%d", slot-1)
}
