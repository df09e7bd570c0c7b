package protomodel

// moveKind is what the scheduler does next.
type moveKind uint8

// Moves of the scheduler.
const (
	mTick       moveKind = iota // real time (and the store's clock) advance a tick
	mClock                      // the store's clock alone steps forward by a TTL
	mStep                       // a process's main thread takes a step
	mRefresh                    // a process's refresher takes a step
	mLand                       // the main thread's request lands
	mLandRef                    // the refresher's request lands
	mLandOrphan                 // an abandoned request lands
	mKill                       // a process dies (its requests in flight may still land)
	mAbandon                    // a v3 gc stops waiting for a DELETE (it lands later)
)

// move is one scheduler choice.
type move struct {
	kind moveKind
	who  uint8
}

// moves appends every move enabled in s.
func moves(s *State, sc *Scope, out []move) []move {
	running := false
	for i := range sc.procs() {
		p := &s.p[i]
		w := uint8(i)
		if p.pend.op != opNone {
			out = append(out, move{mLand, w})
		}
		if p.ref.pend.op != opNone {
			out = append(out, move{mLandRef, w})
		}
		if p.orphan.op != opNone {
			out = append(out, move{mLandOrphan, w})
		}
		if p.dead || p.pc == pcDone {
			continue
		}
		running = true
		if p.pend.op == opNone && !p.blocked() {
			out = append(out, move{mStep, w})
		}
		if p.refReady(s, sc) {
			out = append(out, move{mRefresh, w})
		}
		if s.kills > 0 && sc.role(i) != Deleter {
			out = append(out, move{mKill, w})
		}
		if sc.AbandonG && p.pend.op == opDelBlock && p.orphan.op == opNone {
			out = append(out, move{mAbandon, w})
		}
	}
	if running && s.real < sc.MaxTime {
		out = append(out, move{mTick, 0})
	}
	if running && s.steps > 0 {
		out = append(out, move{mClock, 0})
	}
	return out
}

// apply makes move m in s.
func apply(s *State, sc *Scope, m move) {
	i := int(m.who)
	p := &s.p[i]
	switch m.kind {
	case mTick:
		s.real++
	case mClock:
		s.offset += sc.TTL
		s.steps--
		s.flags |= FlagClockStep
	case mStep:
		run(s, sc, i)
	case mRefresh:
		stepRefresher(s, sc, i)
	case mLand:
		r := p.pend
		p.pend = req{}
		land(s, sc, i, r, fromMain)
		if !p.dead {
			run(s, sc, i)
		}
	case mLandRef:
		r := p.ref.pend
		p.ref.pend = req{}
		land(s, sc, i, r, fromRefresher)
		if !p.dead {
			stepRefresher(s, sc, i)
		}
	case mLandOrphan:
		r := p.orphan
		p.orphan = req{}
		land(s, sc, i, r, fromOrphan)
	case mKill:
		p.dead = true
		s.kills--
		if sc.role(i) == Writer && !p.ready {
			if m := s.st.mans[sc.slot(i)]; m.exists && m.by == uint8(i+1) {
				s.flags |= FlagKilledUnready
			}
		}
	case mAbandon:
		p.orphan, p.pend, p.allOK = p.pend, req{}, false
		run(s, sc, i)
	}
	canon(s)
}

// run steps process i's main thread until it sends a request, waits or
// ends. A landing is followed at once by the step that reads its answer:
// the step only decides what to send next, and a pause before the send is
// the same as one before the landing (time only moves forward, so a later
// lease check could only fail where an earlier one passed).
func run(s *State, sc *Scope, i int) {
	p := &s.p[i]
	for n := 0; p.pend.op == opNone && p.pc != pcDone && !p.blocked(); n++ {
		if n > 64 {
			panic("protomodel: a process loops without sending")
		}
		step(s, sc, i)
		p.respOK, p.respVal, p.respMT, p.respBy = false, 0, 0, 0 // consumed
	}
}

// canon clears what no later step reads, so that states differing only
// in dead values merge.
func canon(s *State) {
	for i := range s.p {
		p := &s.p[i]
		if p.ref.pc == refOff {
			p.ref = refresher{pend: p.ref.pend}
		}
		if p.dead || p.pc == pcDone {
			*p = proc{pc: pcDone, dead: p.dead, ready: p.ready, failed: p.failed, pend: p.pend, orphan: p.orphan,
				ref: refresher{pend: p.ref.pend}, cfgVer: p.cfgVer, doomed: p.doomed, until: p.until, gone0: p.gone0,
				seenBy: p.seenBy}
		}
	}
}

// step runs one step of process i's main thread.
func step(s *State, sc *Scope, i int) {
	if stepLease(s, sc, i) {
		return
	}
	switch sc.role(i) {
	case Writer:
		if sc.Protocol == V3 {
			stepWriterV3(s, sc, i)
		} else {
			stepWriterV2(s, sc, i)
		}
	case GC:
		if sc.Protocol == V3 {
			stepGCV3(s, sc, i)
		} else {
			stepGCV2(s, sc, i)
		}
	case Deleter:
		stepDeleter(s, sc, i)
	}
}
