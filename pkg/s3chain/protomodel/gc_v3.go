package protomodel

// GC pcs of protocol v3 (protocol-v3.md, "GC").
const (
	g3Opened   = pcRole + iota // GET config answered
	g3Held                     // gc lease held (progress only)
	g3Locks                    // LIST locks answered
	g3Gone                     // deleting abandoned locks
	g3Listed                   // LIST blocks answered: B
	g3Mans                     // first LIST manifests answered
	g3Man                      // first GET manifest answered: R0
	g3Doomed                   // doom record PUT answered
	g3Mans1                    // second LIST manifests answered
	g3Man1                     // second GET manifest answered: R1
	g3Del                      // DELETEing F
	g3Undoomed                 // doom record DELETE answered
)

// stepGCV3 is one step of a v3 gc of the chain.
func stepGCV3(s *State, sc *Scope, i int) {
	p := &s.p[i]
	switch p.pc {
	case pcStart:
		p.issue(opGetCfg, 0)
		p.pc = g3Opened
	case g3Opened:
		if !p.respOK {
			p.pc = pcDone
			return
		}
		p.hold(s, sc, g3Held)
	case g3Held:
		if sc.NoLocks { // as if nobody held a lock
			p.pc, p.gone = g3Locks, 0
			return
		}
		p.issue(opListLocks, 0)
		p.pc = g3Locks
	case g3Locks:
		if p.respOK {
			p.release(pcDone)
			return
		}
		p.idx, p.pc = 0, g3Gone
		nextGoneLock(p, g3Listed)
	case g3Gone:
		nextGoneLock(p, g3Listed)
	case g3Listed:
		p.issue(opListMans, 0)
		p.pc = g3Mans
	case g3Mans, g3Man:
		if readManifests(p, g3Mans, g3Man, &p.ref0) {
			return
		}
		if p.doomed = p.keys &^ keysOfDigests(p.ref0); p.doomed == 0 {
			p.release(pcDone)
			return
		}
		p.issue(opPutDoom, 0)
		p.pc = g3Doomed
		if sc.Mutant == NoSecondRead {
			p.pc, p.ref1 = g3Man1, 0
		}
	case g3Doomed:
		p.ref1 = 0
		p.issue(opListMans, 0)
		p.pc = g3Mans1
	case g3Mans1, g3Man1:
		if sc.Mutant != NoSecondRead && readManifests(p, g3Mans1, g3Man1, &p.ref1) {
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
	p.issue(opDelDoom, 0)
	p.pc = g3Undoomed
}
