package protomodel

// GC pcs of protocol v3 (protocol-v3.md, "GC").
const (
	g3Mans     = gcOwn + iota // first LIST manifests answered
	g3Man                     // first GET manifest answered: R0
	g3Doomed                  // doom record PUT answered
	g3Mans1                   // second LIST manifests answered
	g3Man1                    // second GET manifest answered: R1
	g3Del                     // DELETEing F
	g3Undoomed                // doom record DELETE answered
	g3State                   // first read: GET state record answered (Scope.Ready)
	g3Void                    // void record PutIfAbsent answered
	g3DelMan                  // DELETE of a dead manifest answered
	g3State1                  // second read: GET state record answered
)

// stepGCV3 is one step of a v3 gc of the chain.
func stepGCV3(s *State, sc *Scope, i int) {
	p := &s.p[i]
	if stepGCPrelude(s, sc, i) {
		return
	}
	switch p.pc {
	case g3Mans, g3Man, g3State, g3Void, g3DelMan:
		if sc.Ready && readTidy(p) {
			return
		}
		if !sc.Ready && readManifests(p, g3Mans, g3Man, &p.ref0) {
			return
		}
		if p.doomed = p.keys &^ keysOfDigests(p.ref0); p.doomed == 0 {
			p.release(pcDone)
			return
		}
		p.await(opPutDoom, 0, g3Doomed)
		if sc.Mutant == NoSecondRead {
			p.pc, p.ref1 = g3Man1, 0
		}
	case g3Doomed:
		p.ref1 = 0
		p.await(opListMans, 0, g3Mans1)
	case g3Mans1, g3Man1, g3State1:
		if sc.Ready {
			if readStates(p, g3Mans1, g3Man1, g3State1, false) {
				return
			}
			p.ref1 = liveDigs(p)
		} else if sc.Mutant != NoSecondRead && readManifests(p, g3Mans1, g3Man1, &p.ref1) {
			return
		}
		p.keys = p.doomed &^ keysOfDigests(p.ref1) // F
		p.idx, p.allOK, p.pc = 0, true, g3Del
		nextDelete(p, sc)
	case g3Del:
		nextDelete(p, sc)
	case g3Undoomed:
		p.release(pcDone)
	}
}

// readManifests GETs the listed manifests one by one, OR-ing their digests
// into ref; it reports whether a GET was sent (false: all read).
func readManifests(p *proc, listed, got uint8, ref *uint8) bool {
	if p.pc == got && p.respOK {
		*ref |= p.respVal
	}
	if p.pc == listed {
		p.idx = 0
	}
	p.pc = got
	return nextManifest(p, p.mans)
}

// nextDelete DELETEs the next key of F; after the last, the doom record
// goes only if every DELETE was answered.
func nextDelete(p *proc, sc *Scope) {
	for k := int(p.idx); k < maxDig*keysPerDig; k++ {
		if p.keys&(1<<k) != 0 {
			p.idx = uint8(k + 1)
			p.issue(opDelBlock, uint8(k))
			return
		}
	}
	if !p.allOK && sc.Mutant != UndoomAfterErr {
		p.release(pcDone)
		return
	}
	p.await(opDelDoom, 0, g3Undoomed)
}

// readTidy is the gc's first read with state records (FORMAT.md §7.5):
// every listed manifest and then its record; then a void record for each
// unready one (MinAge 0) and a DELETE of each dead one; ref0 is what the
// manifests not dead list. It reports whether a request was sent.
func readTidy(p *proc) bool {
	if p.pc == g3Mans || p.pc == g3Man || p.pc == g3State {
		if readStates(p, g3Mans, g3Man, g3State, true) {
			return true
		}
		p.idx, p.pc = 0, g3Void
	} else if p.pc == g3Void && p.respOK { // the void record decides: dead
		p.deadSet |= 1 << (p.idx - 1)
	}
	if p.pc == g3Void {
		if nextSlot(p, p.pendSet, opPutStateIfAbsent) {
			return true
		}
		p.idx, p.pc = 0, g3DelMan
	}
	if nextSlot(p, p.deadSet, opDelMan) {
		return true
	}
	p.ref0 = liveDigs(p)
	return false
}

// readStates GETs the listed manifests one by one, each followed by its
// state record, noting what each lists and who wrote it, and which are
// unready (first read only: to be voided) or dead. It reports whether a
// request was sent (false: all read).
func readStates(p *proc, listed, got, gotState uint8, first bool) bool {
	k := int(p.idx) - 1
	switch p.pc {
	case listed:
		p.idx, p.readSet, p.deadSet, p.pendSet, p.seenDigs, p.seenBy = 0, 0, 0, 0, 0, 0
	case got:
		if p.respOK {
			p.readSet |= 1 << k
			p.seenDigs |= uint16(p.respVal) << (3 * k)
			p.seenBy |= p.respBy << (2 * k)
			p.await(opGetState, uint8(k), gotState)
			return true
		}
	case gotState:
		switch {
		case p.respVal == recNone && first:
			p.pendSet |= 1 << k
		case p.respVal == recNone:
		case p.respVal == recReady && p.respBy == slotBy(p.seenBy, k):
		default:
			p.deadSet |= 1 << k
		}
	}
	p.pc = got
	return nextManifest(p, p.mans)
}

// nextSlot sends o for the next slot of set from p.idx on.
func nextSlot(p *proc, set uint8, o op) bool {
	for k := int(p.idx); k < maxSlots; k++ {
		if set&(1<<k) != 0 {
			p.idx = uint8(k + 1)
			p.issue(o, uint8(k))
			return true
		}
	}
	return false
}

// liveDigs is what the manifests a gc read and did not find dead list.
func liveDigs(p *proc) uint8 {
	var out uint8
	for k := range maxSlots {
		if (p.readSet&^p.deadSet)&(1<<k) != 0 {
			out |= slotDigs(p.seenDigs, k)
		}
	}
	return out
}
