package protomodel

// stepDeleter deletes the initial backup: DELETE its manifest. From the
// moment it is sent the backup is no longer owed a restore.
func stepDeleter(s *State, i int) {
	p := &s.p[i]
	p.issue(opDelMan, 0)
	s.deleted0 = true
	p.pc = pcDone
}
