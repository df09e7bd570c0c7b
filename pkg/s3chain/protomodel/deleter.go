package protomodel

// stepDeleter deletes the initial backup: DELETE its manifest. From the
// moment it is sent the backup is no longer owed a restore; the send and
// the landing are one move because the send alone changes nothing else.
func stepDeleter(s *State, sc *Scope, i int) {
	s.deleted0 = true
	land(s, sc, i, req{opDelMan, 0}, fromMain)
	s.p[i].pc = pcDone
}
