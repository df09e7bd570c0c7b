package protomodel

// Deleter pcs of a stepwise delete (Scope.stepwiseDeleter).
const (
	d1Read = pcRole + iota // HEAD (GET) of the manifest answered: the backup it means
	d1Void                 // void record PutIfAbsent answered (Scope.Ready)
	d1Gone                 // DELETE answered
)

// stepDeleter deletes a backup. By default, the initial one in a single
// move: DELETE its manifest. From the moment it is sent the backup is no
// longer owed a restore; the send and the landing are one move because
// the send alone changes nothing else. A stepwise deleter (Ready, or
// another slot) sends a HEAD of the manifest (the one it means), with
// Ready a void record, then the DELETE, each landing whenever it likes.
func stepDeleter(s *State, sc *Scope, i int) {
	p := &s.p[i]
	if !sc.stepwiseDeleter() {
		s.deleted0 = true
		land(s, sc, i, req{opDelMan, 0}, fromMain)
		p.pc = pcDone
		return
	}
	slot := sc.DeleteSlot
	switch p.pc {
	case pcStart:
		p.await(opGetMan, slot, d1Read)
	case d1Read:
		if !p.respOK {
			p.pc = pcDone // ErrBackupNotFound
			return
		}
		p.seenBy = p.respBy
		if slot == 0 {
			s.deleted0 = true
		}
		if sc.Ready && sc.Mutant != DeleteWithoutVoid {
			p.await(opPutStateIfAbsent, slot, d1Void)
			return
		}
		p.await(opDelMan, slot, d1Gone)
	case d1Void:
		p.await(opDelMan, slot, d1Gone)
	case d1Gone:
		p.pc = pcDone
	}
}
