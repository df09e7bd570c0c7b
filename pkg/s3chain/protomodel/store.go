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
			p.mans = 0
			for k, m := range st.mans {
				if m.exists {
					p.mans |= 1 << k
				}
			}
		}
	case opGetMan:
		if answer {
			m := st.mans[r.arg]
			p.respOK, p.respVal = m.exists, m.digs
		}
	case opPutManIfAbsent, opPutMan:
		if r.op == opPutMan || !st.mans[r.arg].exists {
			st.mans[r.arg] = manifest{exists: true, digs: sc.Writers[i].Digests, cfgVer: p.cfgVer}
		}
	case opDelMan:
		st.mans[r.arg] = manifest{}
	case opPutDoom:
		st.dooms[i] = doom{exists: true, keys: p.doomed}
	case opListDooms:
		if answer {
			p.dooms = 0
			for k, d := range st.dooms {
				if d.exists {
					p.dooms |= 1 << k
				}
			}
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
