package protomodel

// Which thread of a process a landing request belongs to.
const (
	fromMain = iota
	fromRefresher
	fromOrphan // abandoned: its answer goes nowhere
)

// land applies request r of process i at the store and, unless nobody
// waits for it, records the answer in the process.
func land(s *State, sc *Scope, i int, r req, from int) {
	p := &s.p[i]
	answer := from == fromMain && !p.dead
	st := &s.st
	switch r.op {
	case opGetCfg, opStatCfg:
		if answer {
			p.respOK, p.respVal = st.cfg != 0, st.cfg
		}
	case opPutCfgIfAbsent:
		if st.cfg == 0 {
			st.cfg = r.arg
		}
	case opPutCfg:
		if st.cfg != 0 && st.cfg != r.arg {
			s.flags |= FlagConfigReplaced
		}
		st.cfg = r.arg
	case opDelCfg:
		if st.cfg != 0 {
			s.flags |= FlagConfigDeleted
		}
		st.cfg = 0
		s.noteGCDelete(p)
	case opPutLock:
		if from == fromRefresher && !st.locks[i].exists {
			s.flags |= FlagResurrect
		}
		st.locks[i] = lock{exists: true, mt: s.now()}
	case opStatLock:
		l := st.locks[i]
		if from == fromRefresher && !p.dead {
			p.ref.resp = l.exists
		} else if answer {
			p.respOK, p.respMT = l.exists, l.mt
		}
	case opDelLock:
		st.locks[r.arg] = lock{}
	case opListLocks:
		if answer {
			listLocks(s, sc, i)
		}
	default:
		landData(s, sc, i, r, answer)
	}
}

// landData applies the requests on blocks, manifests and doom records.
func landData(s *State, sc *Scope, i int, r req, answer bool) {
	p, st := &s.p[i], &s.st
	switch r.op {
	case opListBlocks:
		if answer {
			p.keys = st.blocks
		}
	case opPutBlock:
		st.blocks |= 1 << r.arg
	case opDelBlock:
		st.blocks &^= 1 << r.arg
		s.noteGCDelete(p)
	case opListMans:
		if answer {
			p.mans = present(st.mans[:], func(m manifest) bool { return m.exists })
		}
	case opGetMan:
		if answer {
			m := st.mans[r.arg]
			p.respOK, p.respVal, p.respBy = m.exists, m.digs, m.by
		}
	case opPutManIfAbsent, opPutMan:
		if r.op == opPutMan || !st.mans[r.arg].exists {
			st.mans[r.arg] = manifest{exists: true, digs: sc.Writers[i].Digests, cfgVer: p.cfgVer, by: uint8(i + 1)}
			if !answer {
				s.flags |= FlagLateCommit
			}
		}
		if answer {
			p.respOK = st.mans[r.arg].by == uint8(i+1)
		}
	case opDelMan:
		delManifest(s, sc, i, int(r.arg))
	case opPutStateIfAbsent, opGetState:
		landState(s, sc, i, r, answer)
	case opPutDoom:
		st.dooms[i] = doom{exists: true, keys: p.doomed}
	case opListDooms:
		if answer {
			p.dooms = present(st.dooms[:], func(d doom) bool { return d.exists })
		}
	case opGetDoom:
		if d := st.dooms[r.arg]; answer && d.exists {
			p.doomed |= d.keys
		}
	case opDelDoom:
		st.dooms[i] = doom{}
	}
}

// noteGCDelete flags a gc DELETE landing after its lease expired.
func (s *State) noteGCDelete(p *proc) {
	if s.real > p.until {
		s.flags |= FlagLateDelete
	}
}

// listLocks answers a LIST of the chain's locks as process i judges them
// from its own lock's first store ModTime: respOK is "busy" (a live lock of
// the kind it must not run beside), gone the locks not live.
func listLocks(s *State, sc *Scope, i int) {
	p := &s.p[i]
	p.respOK, p.gone = false, 0
	for j, l := range s.st.locks {
		if j == i || !l.exists {
			continue
		}
		live := p.server-l.mt < sc.TTL
		if live && sc.role(j) != sc.role(i) {
			p.respOK = true
		}
		if !live {
			p.gone |= 1 << j
		}
	}
}

// delManifest applies process i's DELETE of slot's manifest, flagging one
// that removes another manifest than the one its sender meant: a writer
// its own, a gc the one it found dead, a deleter the one it read first. A
// deleter's DELETE of the backup it meant ends what it was owed.
func delManifest(s *State, sc *Scope, i, slot int) {
	m := &s.st.mans[slot]
	meant := uint8(i + 1)
	switch sc.role(i) {
	case GC:
		meant = slotBy(s.p[i].seenBy, slot)
	case Deleter:
		meant = s.p[i].seenBy
	}
	if m.exists && m.by != meant {
		s.flags |= FlagWrongDelete
		if sc.role(i) == Writer {
			s.flags |= FlagWrongRetract
		}
	}
	if m.exists && m.by == meant && sc.role(i) == Deleter && m.by > 0 {
		s.p[m.by-1].gone0 = true
	}
	*m = manifest{}
}

// landState applies a state record's create or read (FORMAT.md §7.5). A
// writer's create says ready for its own manifest, anyone else's void; the
// answer is whether the record decides as the creator needs: the writer's
// backup ready, the gc's manifest dead.
func landState(s *State, sc *Scope, i int, r req, answer bool) {
	p, rec := &s.p[i], &s.st.recs[r.arg]
	if r.op == opPutStateIfAbsent && rec.state == recNone {
		*rec = record{state: recVoid}
		if sc.role(i) == Writer {
			*rec = record{state: recReady, by: uint8(i + 1)}
		}
	}
	if !answer {
		return
	}
	switch {
	case r.op == opGetState:
		p.respVal, p.respBy = rec.state, rec.by
	case sc.role(i) == Writer:
		p.respOK = *rec == record{state: recReady, by: uint8(i + 1)}
	default:
		p.respOK = !(rec.state == recReady && rec.by == slotBy(p.seenBy, int(r.arg)))
	}
}

// slotBy and slotDigs read a gc's per-slot notes of the manifests it read.
func slotBy(seen uint8, slot int) uint8 { return seen >> (2 * slot) & 3 }

func slotDigs(seen uint16, slot int) uint8 { return uint8(seen>>(3*slot)) & 7 }

// present is the bit set of the slots of xs that exist: bit k for xs[k],
// as a LIST of manifests or doom records answers it (at most 8 slots).
func present[T any](xs []T, exists func(T) bool) uint8 {
	var bits uint8
	for k, x := range xs {
		if exists(x) {
			bits |= 1 << k
		}
	}
	return bits
}
