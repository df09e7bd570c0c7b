package protomodel

// Program counters shared by every role: start, end, and the hold and
// release sub-machines (which return to proc.ret). Role pcs follow.
const (
	pcStart uint8 = iota
	pcDone
	pcHold     // PUT own lock
	pcHold1    // HEAD own lock: its ModTime is the lease's server time
	pcHold2    // lease held, refresher started
	pcRelease  // wait for the refresher to stop, DELETE own lock
	pcRelease1 // lock deleted
	pcRole     // first role-specific pc
)

// Refresher program counters.
const (
	refOff  uint8 = iota
	refIdle       // between refreshes
	refStat       // HEAD own lock sent: a vanished lock is never written back
	refPut        // PUT own lock sent
)

// hold starts taking a lease; the process continues at ret once held.
func (p *proc) hold(s *State, sc *Scope, ret uint8) {
	if sc.NoLocks {
		p.pc = ret
		return
	}
	p.ret, p.start = ret, s.real
	p.await(opPutLock, 0, pcHold1)
}

// opened keeps the config version a GET config answered (a writer signs
// its manifest with it) and takes the writer lease, continuing at held.
func (p *proc) opened(s *State, sc *Scope, held uint8) {
	p.cfgVer = p.respVal
	p.hold(s, sc, held)
}

// release stops the refresher and deletes the lock, then continues at ret.
func (p *proc) release(ret uint8) { p.ret, p.pc = ret, pcRelease }

// retry takes the writer lease again, continuing at held, after a live gc
// lock made the writer release it; after Scope.Tries attempts the backup
// fails (pkg/s3chain lease.go holdWriter: ErrChainBusy). The writers of
// both protocols retry so.
func (p *proc) retry(s *State, sc *Scope, held uint8) {
	if p.tries++; p.tries >= sc.Tries {
		p.pc, p.failed = pcDone, true
		return
	}
	p.hold(s, sc, held)
}

// stepLease runs the shared pcs; it reports whether pc was one of them.
func stepLease(s *State, sc *Scope, i int) bool {
	p := &s.p[i]
	switch p.pc {
	case pcHold1:
		p.await(opStatLock, 0, pcHold2)
	case pcHold2:
		if !p.respOK { // taken over before it was even read back
			p.pc, p.failed = pcDone, true
			return true
		}
		p.server, p.until, p.lost, p.hasLease = p.respMT, p.start+sc.validity(), false, true
		p.ref = refresher{pc: refIdle, last: s.real}
		p.pc = p.ret
	case pcRelease:
		if sc.NoLocks {
			p.pc = p.ret
			return true
		}
		p.ref.pc, p.hasLease = refOff, false
		p.await(opDelLock, uint8(i), pcRelease1)
	case pcRelease1:
		p.pc = p.ret
	default:
		return false
	}
	return true
}

// blocked tells whether p's main thread must wait: a release waits for a
// refresh in progress to end (lease.release joins the refresher).
func (p *proc) blocked() bool {
	return p.pc == pcRelease && (p.ref.pend.op != opNone || (p.ref.pc != refIdle && p.ref.pc != refOff))
}

// valid is lease.valid: the lease holds by the holder's own clock, and once
// it did not, it never does again.
func (p *proc) valid(s *State) bool {
	if p.lost || s.real > p.until {
		p.lost = true
		return false
	}
	return true
}

// refReady tells whether p's refresher can take a step now.
func (p *proc) refReady(s *State, sc *Scope) bool {
	r := &p.ref
	if p.dead || r.pend.op != opNone {
		return false
	}
	return r.pc == refStat || r.pc == refPut || (r.pc == refIdle && s.real > r.last && r.count < sc.Refresh)
}

// stepRefresher is one step of lease.refresh: HEAD, then PUT the lock, and
// extend the validity if the refresh ended in time.
func stepRefresher(s *State, sc *Scope, i int) {
	p := &s.p[i]
	r := &p.ref
	switch r.pc {
	case refIdle:
		r.start, r.last = s.real, s.real
		r.count++
		r.pend, r.pc = req{opStatLock, 0}, refStat
	case refStat:
		if p.lost || !r.resp {
			p.lost, r.pc = true, refOff
			return
		}
		r.pend, r.pc = req{opPutLock, 0}, refPut
	case refPut:
		switch {
		case p.lost:
			r.pc = refOff
			return
		case s.real < p.until:
			p.until = r.start + sc.validity()
		case s.real > p.until:
			p.lost, r.pc = true, refOff
			return
		}
		r.pc = refIdle
	}
}
